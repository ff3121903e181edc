//! An SVG line plot of a cost curve: one or more series of (size, cost) points, the size on a
//! log-10 axis (the curves span three to four decades), the cost on a linear axis from zero.
//! Plain SVG, no dependencies.

use std::fmt::Write as _;

const W: f64 = 640.0;
const H: f64 = 340.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 46.0;
const COLOURS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

/// One line of the plot.
pub struct Series {
    /// Its legend.
    pub name: String,
    /// (size, cost) points, sizes > 0.
    pub points: Vec<(f64, f64)>,
}

/// The plot titled `title`, the sizes labelled `x_label`, the costs `y_label`.
pub fn svg(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let all = || series.iter().flat_map(|s| s.points.iter());
    let (mut lo, mut hi) = all().fold((f64::MAX, f64::MIN), |(lo, hi), &(x, _)| {
        (lo.min(x.log10()), hi.max(x.log10()))
    });
    if lo > hi {
        (lo, hi) = (0.0, 1.0);
    }
    let (lo, hi) = (lo.floor(), hi.ceil().max(lo.floor() + 1.0));
    let top = nice_ceiling(all().map(|&(_, y)| y).fold(0.0, f64::max));
    let x = |v: f64| LEFT + (W - LEFT - RIGHT) * (v.log10() - lo) / (hi - lo);
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
    for i in 0..=4 {
        let v = top * f64::from(i) / 4.0;
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" x2="{:.1}" y1="{y0:.1}" y2="{y0:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            y(v) + 4.0,
            label(v),
            y0 = y(v)
        );
    }
    for d in lo as i32..=hi as i32 {
        let v = 10f64.powi(d);
        let _ = writeln!(
            out,
            r##"<line x1="{x0:.1}" x2="{x0:.1}" y1="{TOP}" y2="{:.1}" stroke="#eee"/><text x="{x0:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            H - BOTTOM,
            H - BOTTOM + 16.0,
            label(v),
            x0 = x(v)
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{} (log scale)</text>"#,
        LEFT + (W - LEFT - RIGHT) / 2.0,
        H - 8.0,
        escape(x_label)
    );
    let _ = writeln!(
        out,
        r#"<text transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + (H - TOP - BOTTOM) / 2.0,
        escape(y_label)
    );
    for (k, s) in series.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let path: Vec<String> = s
            .points
            .iter()
            .filter(|p| p.0 > 0.0)
            .map(|&(px, py)| format!("{:.1},{:.1}", x(px), y(py)))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            path.join(" ")
        );
        for p in &path {
            let (cx, cy) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(
                out,
                r#"<circle cx="{cx}" cy="{cy}" r="3" fill="{colour}"/>"#
            );
        }
        let ly = TOP + 14.0 + 18.0 * k as f64;
        let _ = writeln!(
            out,
            r#"<line x1="{:.1}" x2="{:.1}" y1="{ly:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            W - RIGHT + 10.0,
            W - RIGHT + 28.0,
            W - RIGHT + 32.0,
            ly + 4.0,
            escape(&s.name)
        );
    }
    out.push_str("</svg>\n");
    out
}

/// A round number at or above `v` (1, 2 or 5 times a power of ten).
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|&c| c >= v)
        .unwrap_or(10.0 * p)
}

/// `v` short: 1k, 2.5M, 0.25.
fn label(v: f64) -> String {
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s
        }
    };
    if v >= 1e6 {
        format!("{}M", trim(format!("{:.2}", v / 1e6)))
    } else if v >= 1e3 {
        format!("{}k", trim(format!("{:.2}", v / 1e3)))
    } else {
        trim(format!("{v:.2}"))
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plot_has_a_line_and_a_dot_per_point_and_round_labels() {
        let s = Series {
            name: "memory".into(),
            points: vec![(1e3, 800.0), (1e4, 810.0), (1e6, 790.0)],
        };
        let out = svg("t", "sessions", "bytes", &[s]);
        assert_eq!(out.matches("<circle").count(), 3);
        assert!(out.contains(">1k<") && out.contains(">1M<"), "{out}");
        assert_eq!(nice_ceiling(810.0), 1000.0);
        assert_eq!(nice_ceiling(0.3), 0.5);
        assert_eq!(label(2500.0), "2.5k");
    }
}
