//! Line plots as SVG files, for the README: a log-scale x axis of sizes and a log-scale y axis of
//! milliseconds, one line per operation, each point labelled with its value.

use std::fmt::Write;

/// One line: its name and its (x, milliseconds) points.
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLOURS: [&str; 5] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"];

/// An SVG of `lines` titled `title`, with `x_label` under the x axis.
pub fn svg(title: &str, x_label: &str, lines: &[Line]) -> String {
    let points = || lines.iter().flat_map(|line| line.points.iter().copied());
    let (x_min, x_max) = bounds(points().map(|(x, _)| x));
    let (y_min, y_max) = bounds(points().map(|(_, ms)| ms.max(1e-3)));
    let (y_min, y_max) = (10f64.powf(y_min.log10().floor()), 10f64.powf(y_max.log10().ceil()));
    let x_at = |x: f64| LEFT + (x.log10() - x_min.log10()) / (x_max.log10() - x_min.log10()).max(1e-9) * plot_w();
    let y_at =
        |ms: f64| TOP + (1.0 - (ms.max(1e-3).log10() - y_min.log10()) / (y_max.log10() - y_min.log10())) * plot_h();

    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/><text x="{}" y="22" text-anchor="middle" font-size="14">{title}</text>"#,
        WIDTH / 2.0
    );
    // y grid: one line per power of ten.
    let mut tick = y_min;
    while tick <= y_max * 1.0001 {
        let y = y_at(tick);
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{} ms</text>"##,
            LEFT + plot_w(),
            LEFT - 6.0,
            y + 4.0,
            number(tick)
        );
        tick *= 10.0;
    }
    for x in points().map(|(x, _)| x as u64).collect::<std::collections::BTreeSet<u64>>() {
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            x_at(x as f64),
            TOP + plot_h() + 18.0,
            count(x)
        );
    }
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">{x_label}</text>"#,
        LEFT + plot_w() / 2.0,
        HEIGHT - 8.0
    );
    for (line, colour) in lines.iter().zip(COLOURS.iter().cycle()) {
        let path: Vec<String> = line.points.iter().map(|&(x, ms)| format!("{:.1},{:.1}", x_at(x), y_at(ms))).collect();
        let _ =
            write!(out, r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#, path.join(" "));
        for &(x, ms) in &line.points {
            let _ = write!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"/><text x="{:.1}" y="{:.1}" fill="{colour}" font-size="10">{}</text>"#,
                x_at(x),
                y_at(ms),
                x_at(x) + 5.0,
                y_at(ms) - 5.0,
                number(ms)
            );
        }
    }
    // Each line's name at its right end, nudged apart so that none overlap.
    let mut names: Vec<(f64, &str, &str)> = lines
        .iter()
        .zip(COLOURS.iter().cycle())
        .filter_map(|(line, colour)| line.points.last().map(|&(_, ms)| (y_at(ms) + 4.0, line.name.as_str(), *colour)))
        .collect();
    names.sort_by(|a, b| a.0.total_cmp(&b.0));
    for i in 1..names.len() {
        names[i].0 = names[i].0.max(names[i - 1].0 + 14.0);
    }
    for (y, name, colour) in names {
        let _ = write!(out, r#"<text x="{:.1}" y="{y:.1}" fill="{colour}">{name}</text>"#, LEFT + plot_w() + 30.0);
    }
    out.push_str("</svg>\n");
    out
}

fn plot_w() -> f64 {
    WIDTH - LEFT - RIGHT
}

fn plot_h() -> f64 {
    HEIGHT - TOP - BOTTOM
}

fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)))
}

/// 0.004, 0.25, 3.1, 42, 1,000, 10,000.
fn number(value: f64) -> String {
    match value {
        v if v >= 1000.0 => count(v.round() as u64),
        v if v >= 10.0 => format!("{v:.0}"),
        v if v >= 1.0 => format!("{v:.1}"),
        v if v >= 0.1 => format!("{v:.2}"),
        v => format!("{v:.3}"),
    }
}

/// 1, 100, 1,000, 10,000.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
