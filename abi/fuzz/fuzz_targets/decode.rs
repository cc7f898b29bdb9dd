#![no_main]

#[allow(dead_code)]
#[path = "../../tests/fuzz_targets/mod.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::decode::decode(data));
