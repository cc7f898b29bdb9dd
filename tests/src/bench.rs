//! The benchmark's output (`bench NAME VALUE  # notes` lines from `/bin/bench`) and the
//! comparison `./qemu-run.sh --compare` prints: one table of two runs (CSV and Markdown), and a
//! gnuplot script of the cases measured at several vector lengths (names ending in `_vlN`).

use std::fmt::Write;

/// What one run reported for one case.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Guest instructions per operation (the best run).
    Insns(f64),
    Skip(String),
    Fail(String),
}

impl Value {
    fn insns(&self) -> Option<f64> {
        match self {
            Value::Insns(v) => Some(*v),
            _ => None,
        }
    }
    fn cell(&self) -> String {
        match self {
            Value::Insns(v) => format!("{v:.1}"),
            Value::Skip(_) => "skip".into(),
            Value::Fail(_) => "fail".into(),
        }
    }
}

/// One benchmark run: the kernel it named and its cases in the order printed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Run {
    pub kernel: String,
    /// The FP policy it ran under (`# svelt-bench: fp policy ...`; empty if not printed).
    pub policy: String,
    pub cases: Vec<(String, Value)>,
}

impl Run {
    pub fn get(&self, case: &str) -> Option<&Value> {
        self.cases.iter().find(|(n, _)| n == case).map(|(_, v)| v)
    }
}

/// Reads a run's console output (carriage returns and other lines are ignored).
pub fn parse(log: &str) -> Run {
    let mut run = Run::default();
    for line in log.lines().map(|l| l.trim_end_matches('\r')) {
        if let Some(k) = line.strip_prefix("# svelt-bench: kernel ") {
            run.kernel = k.trim().to_string();
            continue;
        }
        if let Some(p) = line.strip_prefix("# svelt-bench: fp policy ") {
            run.policy = p.trim().to_string();
            continue;
        }
        let Some(rest) = line.strip_prefix("bench ") else {
            continue;
        };
        let (head, note) = match rest.split_once('#') {
            Some((h, n)) => (h, n.trim().to_string()),
            None => (rest, String::new()),
        };
        let mut words = head.split_whitespace();
        let (Some(name), Some(value), None) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        let value = match value {
            "skip" => Value::Skip(note),
            "fail" => Value::Fail(note),
            v => match v.parse() {
                Ok(x) => Value::Insns(x),
                Err(_) => continue,
            },
        };
        run.cases.push((name.to_string(), value));
    }
    run
}

/// One row of the comparison: the case and what run A and run B reported (None: not run).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub case: String,
    pub a: Option<Value>,
    pub b: Option<Value>,
}

impl Row {
    /// B over A, when both measured.
    pub fn ratio(&self) -> Option<f64> {
        let a = self.a.as_ref()?.insns()?;
        let b = self.b.as_ref()?.insns()?;
        (a > 0.0).then(|| b / a)
    }
}

/// The rows in A's order, then the cases only B ran.
pub fn compare(a: &Run, b: &Run) -> Vec<Row> {
    let mut names: Vec<&str> = a.cases.iter().map(|(n, _)| n.as_str()).collect();
    for (n, _) in &b.cases {
        if !names.contains(&n.as_str()) {
            names.push(n);
        }
    }
    names
        .into_iter()
        .map(|n| Row {
            case: n.to_string(),
            a: a.get(n).cloned(),
            b: b.get(n).cloned(),
        })
        .collect()
}

fn cell(v: &Option<Value>) -> String {
    v.as_ref().map_or_else(|| "-".into(), Value::cell)
}

fn ratio_cell(r: &Row) -> String {
    r.ratio().map_or_else(|| "-".into(), |x| format!("{x:.2}"))
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `case,A,B,ratio B/A` and one line per row; skips and failures as the words `skip`, `fail`,
/// a case one run lacks as empty.
pub fn csv(rows: &[Row], a: &str, b: &str) -> String {
    let mut out = format!(
        "case,{},{},ratio {}/{}\n",
        csv_field(a),
        csv_field(b),
        csv_field(b),
        csv_field(a)
    );
    let f = |v: &Option<Value>| v.as_ref().map_or_else(String::new, Value::cell);
    for r in rows {
        let ratio = r.ratio().map_or_else(String::new, |x| format!("{x:.3}"));
        let _ = writeln!(
            out,
            "{},{},{},{ratio}",
            csv_field(&r.case),
            f(&r.a),
            f(&r.b)
        );
    }
    out
}

/// The table as Markdown (the header lines first, one per entry of `header`).
pub fn markdown(rows: &[Row], a: &str, b: &str, header: &[String]) -> String {
    let mut out = String::new();
    for h in header {
        let _ = writeln!(out, "{h}  ");
    }
    if !header.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(out, "| case | {a} | {b} | {b} / {a} |");
    out.push_str("|---|---:|---:|---:|\n");
    for r in rows {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} |",
            r.case,
            cell(&r.a),
            cell(&r.b),
            ratio_cell(r)
        );
    }
    out
}

/// The table as plain text for the terminal.
pub fn text(rows: &[Row], a: &str, b: &str) -> String {
    let w = rows.iter().map(|r| r.case.len()).max().unwrap_or(4).max(4);
    let ratio = format!("{b}/{a}");
    let mut out = format!("{:w$}  {a:>12}  {b:>12}  {ratio:>10}\n", "case");
    for r in rows {
        let _ = writeln!(
            out,
            "{:w$}  {:>12}  {:>12}  {:>10}",
            r.case,
            cell(&r.a),
            cell(&r.b),
            ratio_cell(r)
        );
    }
    out
}

/// The cases measured at several vector lengths: (case without `_vlN`, [(VL, value)]) in the
/// order of the run, points by VL.
pub fn vl_series(run: &Run) -> Vec<(String, Vec<(u32, f64)>)> {
    let mut series: Vec<(String, Vec<(u32, f64)>)> = Vec::new();
    for (name, v) in &run.cases {
        let Some((base, vl)) = name.rsplit_once("_vl") else {
            continue;
        };
        let (Ok(vl), Some(x)) = (vl.parse::<u32>(), v.insns()) else {
            continue;
        };
        match series.iter_mut().find(|(b, _)| b == base) {
            Some((_, pts)) => pts.push((vl, x)),
            None => series.push((base.to_string(), vec![(vl, x)])),
        }
    }
    for (_, pts) in &mut series {
        pts.sort_by_key(|p| p.0);
    }
    series
}

/// A gnuplot script drawing `png`: cost against vector length, one line per case per run (run A
/// dashed, run B solid, one colour per case), the data inline.
pub fn gnuplot(runs: &[(&str, &Run)], png: &str, title: &str) -> String {
    let mut data = String::new();
    let mut plots = Vec::new();
    let mut cases: Vec<String> = Vec::new();
    for (k, (label, run)) in runs.iter().enumerate() {
        for (case, pts) in vl_series(run) {
            let colour = match cases.iter().position(|c| *c == case) {
                Some(i) => i,
                None => {
                    cases.push(case.clone());
                    cases.len() - 1
                }
            };
            let block = format!("$d{k}_{colour}");
            let _ = writeln!(data, "{block} << EOD");
            for (vl, x) in pts {
                let _ = writeln!(data, "{vl} {x}");
            }
            data.push_str("EOD\n");
            plots.push(format!(
                "{block} using 1:2 with linespoints lc {} dt {} pt {} lw 2 title \"{} ({})\"",
                colour + 1,
                if k == 0 { 2 } else { 1 },
                if k == 0 { 6 } else { 7 },
                case,
                label.replace('"', "'")
            ));
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "set terminal pngcairo size 1200,800 noenhanced font \"sans,10\""
    );
    let _ = writeln!(out, "set output \"{png}\"");
    out.push_str(&data);
    let _ = writeln!(out, "set title \"{}\"", title.replace('"', "'"));
    out.push_str(
        "set xlabel \"vector length (bytes): SVE VL, or SME streaming VL for the _sme cases\"\n\
         set ylabel \"guest instructions per operation (log scale)\"\n\
         set logscale x 2\nset logscale y\nset xtics (16, 32, 64, 128, 256)\n\
         set xrange [12:340]\nset grid\nset key outside right top\n",
    );
    if plots.is_empty() {
        out.push_str(
            "set label 1 \"no case was measured at several vector lengths\" at graph 0.3, 0.5\n",
        );
        out.push_str("set yrange [1:10]\nplot 1/0 notitle\n");
    } else {
        let _ = writeln!(out, "plot {}", plots.join(", \\\n     "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SVELT: &str = "\
# svelt-bench: kernel Svelt 0.1.0-svelt\r
# svelt-bench: fp policy fp=eager sve_syscall=discard sme_trap=lazy abi=linux\r
# svelt-bench: calibration: a 20001-instruction loop took 20001 ticks-as-instructions\r
bench syscall_getpid 250.5  # median 251.0 max 260.0, 7 runs x 2000 ops\r
bench signal_roundtrip_sve_vl16 1000.0  # median ..\r
bench signal_roundtrip_sve_vl32 1100.0  # median ..\r
bench signal_roundtrip_sme_zt0 skip  # no SME2 (AT_HWCAP2 lacks HWCAP2_SME2: ZT0, QEMU 11.1)\r
bench page_fault_anon fail  # page 3 holds 0, want 253\r
svelt-bench: exit status 1\r
";
    const LINUX: &str = "\
[    0.1] random kernel line\n\
# svelt-bench: kernel Linux 7.3.4+deb13-arm64\n\
bench syscall_getpid 500.0  # median\n\
bench signal_roundtrip_sve_vl32 2200.0  # x\n\
bench signal_roundtrip_sve_vl16 2000.0  # x\n\
bench only_linux 7.0\n\
bench broken line here  # not a value\n\
";

    #[test]
    fn parses_values_skips_and_failures() {
        let r = parse(SVELT);
        assert_eq!(r.kernel, "Svelt 0.1.0-svelt");
        assert_eq!(
            r.policy,
            "fp=eager sve_syscall=discard sme_trap=lazy abi=linux"
        );
        assert_eq!(r.cases.len(), 5);
        assert_eq!(r.get("syscall_getpid"), Some(&Value::Insns(250.5)));
        assert!(
            matches!(r.get("signal_roundtrip_sme_zt0"), Some(Value::Skip(w)) if w.starts_with("no SME2"))
        );
        assert!(matches!(r.get("page_fault_anon"), Some(Value::Fail(_))));
        let l = parse(LINUX);
        assert_eq!(l.kernel, "Linux 7.3.4+deb13-arm64");
        assert_eq!(l.policy, "");
        assert_eq!(l.cases.len(), 4, "{:?}", l.cases);
    }

    #[test]
    fn table_rows_ratios_csv_and_markdown() {
        let (l, s) = (parse(LINUX), parse(SVELT));
        let rows = compare(&l, &s);
        let names: Vec<&str> = rows.iter().map(|r| r.case.as_str()).collect();
        assert_eq!(
            names,
            [
                "syscall_getpid",
                "signal_roundtrip_sve_vl32",
                "signal_roundtrip_sve_vl16",
                "only_linux",
                "signal_roundtrip_sme_zt0",
                "page_fault_anon"
            ]
        );
        assert_eq!(rows[0].ratio(), Some(0.501));
        assert_eq!(rows[3].ratio(), None);
        let c = csv(&rows, "Linux", "Svelt");
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines[0], "case,Linux,Svelt,ratio Svelt/Linux");
        assert_eq!(lines[1], "syscall_getpid,500.0,250.5,0.501");
        assert_eq!(lines[4], "only_linux,7.0,,");
        assert_eq!(lines[5], "signal_roundtrip_sme_zt0,,skip,");
        assert_eq!(lines[6], "page_fault_anon,,fail,");
        assert_eq!(
            csv(&[], "a,b", "c\"d").lines().next(),
            Some("case,\"a,b\",\"c\"\"d\",ratio \"c\"\"d\"/\"a,b\"")
        );
        let md = markdown(&rows, "Linux", "Svelt", &["QEMU x".into()]);
        assert!(md.starts_with(
            "QEMU x  \n\n| case | Linux | Svelt | Svelt / Linux |\n|---|---:|---:|---:|\n"
        ));
        assert!(md.contains("| `syscall_getpid` | 500.0 | 250.5 | 0.50 |\n"));
        assert!(md.contains("| `only_linux` | 7.0 | - | - |\n"));
        assert!(text(&rows, "Linux", "Svelt").contains("page_fault_anon"));
    }

    #[test]
    fn vl_series_and_plot() {
        let (l, s) = (parse(LINUX), parse(SVELT));
        assert_eq!(
            vl_series(&l),
            [(
                "signal_roundtrip_sve".to_string(),
                vec![(16, 2000.0), (32, 2200.0)]
            )]
        );
        let gp = gnuplot(&[("Linux", &l), ("Svelt", &s)], "/x/vl.png", "t");
        assert!(gp.contains("set output \"/x/vl.png\""));
        assert!(gp.contains("$d0_0 << EOD\n16 2000\n32 2200\nEOD\n"));
        assert!(gp.contains("$d1_0 << EOD\n16 1000\n32 1100\nEOD\n"));
        assert_eq!(gp.matches("with linespoints").count(), 2);
        let empty = gnuplot(&[("Linux", &Run::default())], "p.png", "t");
        assert!(empty.contains("plot 1/0 notitle"));
    }
}
