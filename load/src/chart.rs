//! An SVG chart of a run: successful and failed requests per second, with the run's events
//! (a backend kill, a restart) marked. Plain SVG, no dependencies, readable in any browser.

use crate::run::RunResult;
use std::fmt::Write as _;

const W: f64 = 760.0;
const H: f64 = 300.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 40.0;

/// The chart, titled `title`.
pub fn svg(title: &str, run: &RunResult) -> String {
    let seconds = run.timeline.len().max(1) as f64;
    let peak = run
        .timeline
        .iter()
        .map(|s| s.ok.max(s.failed))
        .max()
        .unwrap_or(0)
        .max(run.offered_rate.ceil() as u64)
        .max(1) as f64;
    let top = nice_ceiling(peak);
    let x = |t: f64| LEFT + (W - LEFT - RIGHT) * t / seconds;
    let y = |v: f64| H - BOTTOM - (H - TOP - BOTTOM) * v / top;

    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="18" font-size="13" font-weight="bold">{}</text>"#,
        escape(title)
    );
    // grid and y labels
    for i in 0..=4 {
        let v = top * i as f64 / 4.0;
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" x2="{}" y1="{y0:.1}" y2="{y0:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            y(v) + 4.0,
            v as u64,
            y0 = y(v)
        );
    }
    // x labels every 10 s (or every second on short runs)
    let step = if seconds > 20.0 { 10 } else { 1 };
    for t in (0..=seconds as u64).step_by(step) {
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{t}</text>"#,
            x(t as f64),
            H - BOTTOM + 16.0
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{}" text-anchor="middle">seconds</text><text x="14" y="{:.1}" transform="rotate(-90 14 {:.1})" text-anchor="middle">requests / s</text>"#,
        LEFT + (W - LEFT - RIGHT) / 2.0,
        H - 6.0,
        H / 2.0,
        H / 2.0
    );
    if run.offered_rate > 0.0 {
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" x2="{}" y1="{yo:.1}" y2="{yo:.1}" stroke="#888" stroke-dasharray="2 3"/>"##,
            W - RIGHT,
            yo = y(run.offered_rate)
        );
    }
    for ev in &run.events {
        let _ = writeln!(
            out,
            r##"<line x1="{ex:.1}" x2="{ex:.1}" y1="{TOP}" y2="{}" stroke="#555" stroke-dasharray="5 4"/><text x="{:.1}" y="{}" fill="#555">{}</text>"##,
            H - BOTTOM,
            x(ev.at_s) + 4.0,
            TOP + 10.0,
            escape(&ev.label),
            ex = x(ev.at_s)
        );
    }
    let series = |pick: &dyn Fn(&crate::run::Second) -> u64| -> String {
        run.timeline
            .iter()
            .map(|s| format!("{:.1},{:.1}", x(s.t as f64 + 0.5), y(pick(s) as f64)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let _ = writeln!(
        out,
        r##"<polyline fill="none" stroke="#2a7" stroke-width="2" points="{}"/>"##,
        series(&|s| s.ok)
    );
    let _ = writeln!(
        out,
        r##"<polyline fill="none" stroke="#d33" stroke-width="2" points="{}"/>"##,
        series(&|s| s.failed)
    );
    let _ = writeln!(
        out,
        r##"<g transform="translate({},{TOP})"><rect width="10" height="3" y="-4" fill="#2a7"/><text x="14">ok/s</text><rect x="60" width="10" height="3" y="-4" fill="#d33"/><text x="74">failed/s</text><line x1="130" x2="144" y1="-3" y2="-3" stroke="#888" stroke-dasharray="2 3"/><text x="148">offered</text></g>"##,
        W - RIGHT - 210.0
    );
    out.push_str("</svg>\n");
    out
}

/// 1, 2, 5 × 10^k at or above `v`.
fn nice_ceiling(v: f64) -> f64 {
    let mag = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|c| *c >= v)
        .unwrap_or(10.0 * mag)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::nice_ceiling;

    #[test]
    fn axis_tops_are_round() {
        assert_eq!(nice_ceiling(180.0), 200.0);
        assert_eq!(nice_ceiling(200.0), 200.0);
        assert_eq!(nice_ceiling(201.0), 500.0);
        assert_eq!(nice_ceiling(7.0), 10.0);
    }
}
