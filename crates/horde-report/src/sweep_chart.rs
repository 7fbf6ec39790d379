//! The sweep's chart (sweep.svg, and the capacity page of its report.html): throughput on the
//! left axis, p50 and p99 on the right, against the level, and beneath them, on the same level
//! axis, the error rate the SLOs judge. Ticks fall on round numbers (1, 2, 5 times a power of
//! ten), margins are sized to the longest label so none is clipped, the SLOs' limits and (for
//! an arrival-rate sweep) the offered load are drawn, and the level axis is logarithmic when the
//! levels grow geometrically (1, 2, 4, 8 ...).

use crate::sweep::{format_level, SweepLevel, SweepReport};
use horde_plan::{LatencySource, ThresholdMetric, ThresholdScope, ThresholdSpec};
use std::fmt::Write;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 516.0;
/// The error rate's strip under the main plot, and the gap between them.
const ERRORS_H: f64 = 64.0;
const ERRORS_GAP: f64 = 12.0;
/// A generous width of one character of the 12 px sans-serif labels: margins computed with it
/// always hold the label.
const CHAR_W: f64 = 7.2;
const THROUGHPUT: &str = "#0072B2";
const P50: &str = "#E69F00";
const P99: &str = "#D55E00";
const OFFERED: &str = "#777777";
const SLO: &str = "#CC79A7";
const KNEE: &str = "#009E73";
const ERRORS: &str = "#000000";

/// Round ticks covering [0, max]: about `count` of them, a step of 1, 2 or 5 times a power of
/// ten; the last tick is at or above `max`.
pub fn nice_ticks(max: f64, count: usize) -> Vec<f64> {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let rough = max / count.max(1) as f64;
    let power = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * power).find(|s| *s >= rough).unwrap_or(10.0 * power);
    let steps = (max / step - 1e-9).ceil().max(1.0) as usize;
    (0..=steps).map(|i| step * i as f64).collect()
}

/// Ticks at 1, 2 and 5 times powers of ten between `low` and `high` (both > 0).
fn log_ticks(low: f64, high: f64) -> Vec<f64> {
    let mut ticks = Vec::new();
    let mut power = 10f64.powf(low.log10().floor());
    while power <= high {
        for m in [1.0, 2.0, 5.0] {
            let tick = m * power;
            if tick >= low * 0.999 && tick <= high * 1.001 {
                ticks.push(tick);
            }
        }
        power *= 10.0;
    }
    ticks
}

/// A tick's label with the decimals its step needs: 0.25, 2.5, 250, 2500.
fn tick_label(value: f64, step: f64) -> String {
    let decimals = if step >= 1.0 || step <= 0.0 { 0 } else { (-step.log10()).ceil() as usize };
    format!("{value:.decimals$}")
}

/// Whether levels grow by a steady factor (each at least 1.5 times the last, spanning ten
/// times or more): then a log axis spaces them evenly.
pub fn grows_geometrically(levels: &[f64]) -> bool {
    let mut unique: Vec<f64> = levels.iter().copied().filter(|l| *l > 0.0).collect();
    unique.sort_by(f64::total_cmp);
    unique.dedup();
    if unique.len() < 3 {
        return false;
    }
    let ratios: Vec<f64> = unique.windows(2).map(|w| w[1] / w[0]).collect();
    let (low, high) = ratios.iter().fold((f64::MAX, 0.0f64), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
    low >= 1.5 && high / low <= 2.0 && unique[unique.len() - 1] / unique[0] >= 10.0
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn text_width(text: &str) -> f64 {
    text.chars().count() as f64 * CHAR_W
}

/// The p99s (in µs) too noisy to set the latency axis: a level's p99 more than
/// [`NOISY_P99_RATIO`] times every p99 at the levels above it. Latency grows with load, so such
/// a p99 (the first level's, measured while connections and caches warmed up) is noise, and
/// an axis set by it flattens every other point. The highest levels' p99s, where the real
/// growth shows, always count.
fn noisy_p99(runs: &[SweepLevel]) -> Vec<u64> {
    runs.iter()
        .filter(|l| {
            let above = runs.iter().filter(|other| other.level > l.level).map(|other| other.p99_us).max();
            above.is_some_and(|above| l.p99_us as f64 > NOISY_P99_RATIO * above.max(1) as f64)
        })
        .map(|l| l.p99_us)
        .collect()
}

const NOISY_P99_RATIO: f64 = 3.0;

/// A latency SLO's limit in ms, a throughput SLO's in requests per second, an error rate's in
/// percent.
enum Limit {
    LatencyMs(f64),
    Throughput(f64),
    ErrorPercent(f64),
}

/// Only what the chart plots has a line: all requests' (corrected) latency, throughput and
/// error rate.
fn limit(threshold: &ThresholdSpec) -> Option<Limit> {
    if !matches!(threshold.scope, ThresholdScope::Global) {
        return None;
    }
    match threshold.metric {
        ThresholdMetric::Latency(LatencySource::Corrected, _) => Some(Limit::LatencyMs(threshold.bound / 1000.0)),
        ThresholdMetric::Throughput => Some(Limit::Throughput(threshold.bound)),
        ThresholdMetric::ErrorRate => Some(Limit::ErrorPercent(threshold.bound * 100.0)),
        _ => None,
    }
}

/// The level axis: linear from 0, or logarithmic around the levels.
struct LevelAxis {
    log: bool,
    low: f64,
    high: f64,
    ticks: Vec<f64>,
    step: f64,
}

impl LevelAxis {
    fn new(levels: &[f64]) -> LevelAxis {
        let max = levels.iter().copied().fold(0.0, f64::max).max(1.0);
        if grows_geometrically(levels) {
            let min = levels.iter().copied().filter(|l| *l > 0.0).fold(f64::MAX, f64::min);
            let (low, high) = (min / 1.3, max * 1.3);
            let ticks = log_ticks(low, high);
            LevelAxis { log: true, low, high, step: ticks.first().copied().unwrap_or(1.0), ticks }
        } else {
            let ticks = nice_ticks(max, 6);
            let step = ticks.get(1).copied().unwrap_or(1.0);
            LevelAxis { log: false, low: 0.0, high: *ticks.last().unwrap_or(&max), ticks, step }
        }
    }

    /// 0 to 1 across the plot.
    fn fraction(&self, level: f64) -> f64 {
        if self.log {
            (level.max(self.low).ln() - self.low.ln()) / (self.high.ln() - self.low.ln())
        } else {
            level / self.high
        }
    }
}

/// The chart of a sweep: each level's verdict (runs of one level merged) drawn.
pub fn render(report: &SweepReport) -> String {
    draw(report, &crate::sweep::verdicts(&report.levels))
}

fn draw(report: &SweepReport, levels: &[SweepLevel]) -> String {
    let all_runs = &report.levels;
    let level_values: Vec<f64> = all_runs.iter().map(|l| l.level).collect();
    let limits: Vec<(String, Limit)> = report
        .slos
        .iter()
        .filter_map(|text| text.parse::<ThresholdSpec>().ok())
        .filter_map(|t| limit(&t).map(|l| (t.text.clone(), l)))
        .collect();
    let offered = report.model == "rate";
    let max_rps = all_runs
        .iter()
        .map(|l| l.throughput_rps)
        .chain(limits.iter().filter_map(|(_, l)| if let Limit::Throughput(v) = l { Some(*v) } else { None }))
        .chain(all_runs.iter().filter(|_| offered).map(|l| l.level))
        .fold(0.0, f64::max);
    let noisy = noisy_p99(all_runs);
    let max_ms = all_runs
        .iter()
        .filter(|l| !noisy.contains(&l.p99_us))
        .map(|l| l.p99_us as f64 / 1000.0)
        .chain(limits.iter().filter_map(|(_, l)| if let Limit::LatencyMs(v) = l { Some(*v) } else { None }))
        .fold(0.0, f64::max);
    // At least 1 %: a sweep without errors shows a flat line at the bottom of a readable axis.
    let max_errors = all_runs
        .iter()
        .map(|l| l.error_rate * 100.0)
        .chain(limits.iter().filter_map(|(_, l)| if let Limit::ErrorPercent(v) = l { Some(*v) } else { None }))
        .fold(1.0, f64::max);
    let rps_ticks = nice_ticks(max_rps * 1.05, 5);
    let ms_ticks = nice_ticks(max_ms * 1.05, 5);
    let error_ticks = nice_ticks(max_errors * 1.05, 2);
    let error_step = error_ticks.get(1).copied().unwrap_or(1.0);
    let rps_step = rps_ticks.get(1).copied().unwrap_or(1.0);
    let ms_step = ms_ticks.get(1).copied().unwrap_or(1.0);
    let x_axis = LevelAxis::new(&level_values);
    // Margins that hold the widest tick label, the axis titles and the legend.
    let widest = |ticks: &[f64], step: f64| ticks.iter().map(|t| text_width(&tick_label(*t, step))).fold(0.0, f64::max);
    let left = 26.0 + widest(&rps_ticks, rps_step).max(widest(&error_ticks, error_step)) + 10.0;
    let right = 26.0 + widest(&ms_ticks, ms_step) + 10.0;
    let first_x_label = x_axis.ticks.first().map_or(0.0, |t| text_width(&tick_label(*t, x_axis.step)) / 2.0);
    let last_x_label = x_axis.ticks.last().map_or(0.0, |t| text_width(&tick_label(*t, x_axis.step)) / 2.0);
    let left = left.max(first_x_label + 4.0);
    let right = right.max(last_x_label + 4.0);
    let (top, bottom) = (44.0, 76.0);
    let plot_w = WIDTH - left - right;
    let plot_h = HEIGHT - top - bottom - ERRORS_GAP - ERRORS_H;
    let rps_max = *rps_ticks.last().unwrap_or(&1.0);
    let ms_max = *ms_ticks.last().unwrap_or(&1.0);
    let errors_max = *error_ticks.last().unwrap_or(&1.0);
    let x = |level: f64| left + plot_w * x_axis.fraction(level);
    let y_rps = |rps: f64| top + plot_h * (1.0 - rps / rps_max);
    // A noisy p99 beyond the axis is drawn at its top, marked with its value.
    let y_ms = |ms: f64| top + plot_h * (1.0 - ms.min(ms_max) / ms_max);
    let bottom_y = top + plot_h;
    let right_x = left + plot_w;
    // The error rate's strip, under the main plot; the level axis's labels go under it.
    let errors_top = bottom_y + ERRORS_GAP;
    let errors_bottom = errors_top + ERRORS_H;
    let y_errors = |percent: f64| errors_top + ERRORS_H * (1.0 - percent / errors_max);

    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12" class="sweep-chart">"#
    );
    let _ = write!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let unit = if report.model == "rate" { "users/s" } else { "users" };
    let mut title = format!("{}: throughput and latency by {unit}", report.name);
    let room = ((WIDTH - 20.0) / (CHAR_W * 15.0 / 12.0)) as usize;
    if title.chars().count() > room {
        title = title.chars().take(room.saturating_sub(1)).collect::<String>() + "…";
    }
    let _ = write!(
        svg,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">{}</text>"#,
        WIDTH / 2.0,
        escape(&title)
    );
    // Grid and tick labels: throughput (and, under it, errors) on the left, latency on the
    // right, each at its own round numbers.
    let left_axis = |svg: &mut String, ticks: &[f64], step: f64, y: &dyn Fn(f64) -> f64, colour: &str| {
        for t in ticks {
            let gy = y(*t);
            let _ = write!(
                svg,
                r##"<line x1="{left:.1}" y1="{gy:.1}" x2="{right_x:.1}" y2="{gy:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="{colour}">{}</text>"##,
                left - 6.0,
                gy + 4.0,
                tick_label(*t, step)
            );
        }
    };
    left_axis(&mut svg, &rps_ticks, rps_step, &y_rps, THROUGHPUT);
    left_axis(&mut svg, &error_ticks, error_step, &y_errors, ERRORS);
    for t in &ms_ticks {
        let gy = y_ms(*t);
        let _ = write!(
            svg,
            r##"<line x1="{right_x:.1}" y1="{gy:.1}" x2="{:.1}" y2="{gy:.1}" stroke="#333"/><text x="{:.1}" y="{:.1}" fill="{P99}">{}</text>"##,
            right_x + 4.0,
            right_x + 6.0,
            gy + 4.0,
            tick_label(*t, ms_step)
        );
    }
    for t in &x_axis.ticks {
        let gx = x(*t);
        let _ = write!(
            svg,
            r##"<line x1="{gx:.1}" y1="{top:.1}" x2="{gx:.1}" y2="{bottom_y:.1}" stroke="#f3f3f3"/><line x1="{gx:.1}" y1="{errors_top:.1}" x2="{gx:.1}" y2="{errors_bottom:.1}" stroke="#f3f3f3"/><line x1="{gx:.1}" y1="{errors_bottom:.1}" x2="{gx:.1}" y2="{:.1}" stroke="#333"/><text x="{gx:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            errors_bottom + 4.0,
            errors_bottom + 17.0,
            tick_label(*t, x_axis.step)
        );
    }
    let _ = write!(
        svg,
        r##"<line x1="{left:.1}" y1="{top:.1}" x2="{left:.1}" y2="{bottom_y:.1}" stroke="#333"/><line x1="{left:.1}" y1="{bottom_y:.1}" x2="{right_x:.1}" y2="{bottom_y:.1}" stroke="#333"/><line x1="{right_x:.1}" y1="{top:.1}" x2="{right_x:.1}" y2="{bottom_y:.1}" stroke="#333"/>"##
    );
    let _ = write!(
        svg,
        r##"<rect x="{left:.1}" y="{errors_top:.1}" width="{plot_w:.1}" height="{ERRORS_H:.1}" fill="none" stroke="#333"/>"##
    );
    let middle_y = top + plot_h / 2.0;
    let errors_middle = errors_top + ERRORS_H / 2.0;
    let _ = write!(
        svg,
        r##"<text x="14" y="{errors_middle:.1}" transform="rotate(-90 14 {errors_middle:.1})" text-anchor="middle" fill="{ERRORS}">errors %</text>"##
    );
    let _ = write!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">{unit}{}</text><text x="14" y="{middle_y:.1}" transform="rotate(-90 14 {middle_y:.1})" text-anchor="middle" fill="{THROUGHPUT}">throughput (OK req/s)</text><text x="{:.1}" y="{middle_y:.1}" transform="rotate(90 {:.1} {middle_y:.1})" text-anchor="middle" fill="{P99}">latency (ms)</text>"##,
        left + plot_w / 2.0,
        errors_bottom + 34.0,
        if x_axis.log { " (log scale)" } else { "" },
        WIDTH - 12.0,
        WIDTH - 12.0
    );
    // A label inside the plot that never runs past its right edge.
    let inside = |at_x: f64, text: &str| -> (f64, &'static str) {
        if at_x + 4.0 + text_width(text) > right_x - 2.0 {
            (at_x - 4.0, "end")
        } else {
            (at_x + 4.0, "start")
        }
    };
    let mut marker_row = 0.0;
    let mut marker = |svg: &mut String, level: f64, label: String, colour: &str, dash: &str| {
        let mx = x(level);
        let (lx, anchor) = inside(mx, &label);
        let _ = write!(
            svg,
            r#"<line x1="{mx:.1}" y1="{top:.1}" x2="{mx:.1}" y2="{bottom_y:.1}" stroke="{colour}" stroke-dasharray="{dash}"/><text x="{lx:.1}" y="{:.1}" text-anchor="{anchor}" fill="{colour}">{}</text>"#,
            top + 14.0 + marker_row,
            escape(&label)
        );
        marker_row += 16.0;
    };
    if let Some(knee) = report.knee {
        marker(&mut svg, knee, format!("knee {}", format_level(knee)), KNEE, "4 3");
    }
    if let Some(slo) = report.highest_meeting_slos {
        marker(&mut svg, slo, format!("SLOs met up to {}", format_level(slo)), SLO, "2 2");
    }
    // The SLOs' limits: horizontal lines on their own axis, labelled at the right end.
    for (text, limit) in &limits {
        // One colour for every limit (the legend's); the label names the metric, and so the axis.
        let (ly, colour, plot_top) = match limit {
            Limit::LatencyMs(v) => (y_ms(*v), SLO, top),
            Limit::Throughput(v) => (y_rps(*v), SLO, top),
            Limit::ErrorPercent(v) => (y_errors(*v), SLO, errors_top),
        };
        let label = format!("SLO {text}");
        let _ = write!(
            svg,
            r#"<line x1="{left:.1}" y1="{ly:.1}" x2="{right_x:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="1.5" stroke-dasharray="8 4" opacity="0.7"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="{colour}">{}</text>"#,
            right_x - 4.0,
            (ly - 5.0).max(plot_top + 12.0),
            escape(&label)
        );
    }
    let polyline = |svg: &mut String, points: Vec<(f64, f64)>, colour: &str, dash: &str| {
        let path: Vec<String> = points.iter().map(|(px, py)| format!("{px:.1},{py:.1}")).collect();
        let _ = write!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" {dash} points="{}"/>"#,
            path.join(" ")
        );
        for (px, py) in &points {
            let _ = write!(svg, r#"<circle cx="{px:.1}" cy="{py:.1}" r="3" fill="{colour}"/>"#);
        }
    };
    if offered {
        // An arrival-rate sweep offers `level` users a second: with one request each, the
        // throughput a server keeping up would reach.
        let points = levels.iter().map(|l| (x(l.level), y_rps(l.level))).collect();
        let path: Vec<(f64, f64)> = points;
        let line: Vec<String> = path.iter().map(|(px, py)| format!("{px:.1},{py:.1}")).collect();
        let _ = write!(
            svg,
            r#"<polyline fill="none" stroke="{OFFERED}" stroke-width="1.5" stroke-dasharray="3 3" points="{}"/>"#,
            line.join(" ")
        );
    }
    polyline(&mut svg, levels.iter().map(|l| (x(l.level), y_rps(l.throughput_rps))).collect(), THROUGHPUT, "");
    polyline(&mut svg, levels.iter().map(|l| (x(l.level), y_ms(l.p50_us as f64 / 1000.0))).collect(), P50, "");
    polyline(
        &mut svg,
        levels.iter().map(|l| (x(l.level), y_ms(l.p99_us as f64 / 1000.0))).collect(),
        P99,
        r#"stroke-dasharray="6 3""#,
    );
    polyline(&mut svg, levels.iter().map(|l| (x(l.level), y_errors(l.error_rate * 100.0))).collect(), ERRORS, "");
    for l in levels.iter().filter(|l| l.p99_us as f64 / 1000.0 > ms_max) {
        let (mx, label) = (x(l.level), format!("p99 {:.0} ms", l.p99_us as f64 / 1000.0));
        let (lx, anchor) = inside(mx, &label);
        let _ = write!(
            svg,
            r#"<path class="clipped" d="M{mx:.1},{:.1} l-5,8 h10 z" fill="{P99}"/><text x="{lx:.1}" y="{:.1}" text-anchor="{anchor}" fill="{P99}">{}</text>"#,
            top - 1.0,
            top + 18.0,
            escape(&label)
        );
    }
    // Runs not judged (their load not delivered, or cut short): a grey hollow marker at their
    // throughput, and why.
    for l in all_runs.iter().filter(|l| !l.judged()) {
        let (mx, my) = (x(l.level), y_rps(l.throughput_rps));
        let label = if l.delivered() { "interrupted" } else { "load not delivered" };
        let half = text_width(label) / 2.0;
        let lx = mx.clamp(left + half, right_x - half);
        let _ = write!(
            svg,
            r##"<circle cx="{mx:.1}" cy="{my:.1}" r="5" fill="none" stroke="#888" stroke-width="2"/><text x="{lx:.1}" y="{:.1}" fill="#888" text-anchor="middle">{label}</text>"##,
            (my - 9.0).max(top + 12.0)
        );
    }
    let mut legend: Vec<(&str, &str)> =
        vec![("— throughput", THROUGHPUT), ("— p50", P50), ("- - p99", P99), ("— errors %", ERRORS)];
    if offered {
        legend.push(("··· offered (users/s)", OFFERED));
    }
    if !limits.is_empty() {
        legend.push(("– – SLO limit", SLO));
    }
    let legend_y = HEIGHT - 10.0;
    let mut lx = left;
    for (label, colour) in legend {
        let _ = write!(svg, r#"<text x="{lx:.1}" y="{legend_y}" fill="{colour}">{label}</text>"#);
        lx += text_width(label) + 18.0;
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_fall_on_round_numbers_and_cover_the_maximum() {
        assert_eq!(nice_ticks(721.6, 5), vec![0.0, 200.0, 400.0, 600.0, 800.0]);
        assert_eq!(nice_ticks(0.8, 5), vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8]);
        assert_eq!(nice_ticks(47.0, 5), vec![0.0, 10.0, 20.0, 30.0, 40.0, 50.0]);
        assert_eq!(nice_ticks(0.0, 5), vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]);
        assert_eq!(tick_label(0.6000000000000001, 0.2), "0.6");
        assert_eq!(tick_label(2500.0, 500.0), "2500");
        assert_eq!(log_ticks(0.7, 13.0), vec![1.0, 2.0, 5.0, 10.0]);
    }

    #[test]
    fn a_noisy_p99_at_the_first_level_does_not_set_the_latency_axis_and_is_marked() {
        let level = |level: f64, p99_ms: u64| SweepLevel {
            level,
            requests: 100,
            ok: 100,
            p50_us: 1000,
            p99_us: p99_ms * 1000,
            throughput_rps: level * 10.0,
            measured_ms: 1000,
            results: format!("level-{level}"),
            run: 1,
            ..SweepLevel::default()
        };
        let levels = vec![level(1.0, 250), level(2.0, 5), level(4.0, 6), level(8.0, 12), level(16.0, 40)];
        assert_eq!(noisy_p99(&levels), vec![250_000]);
        let report = SweepReport::analyse("s", "users", &[], 1000, 0, levels.clone());
        let svg = draw(&report, &levels);
        // The axis goes to 50 ms (40 ms, rounded up), not to 250; the clipped point says its value.
        assert!(svg.contains(">50</text>") && !svg.contains(">250</text>"), "{svg}");
        assert!(svg.contains(r#"class="clipped""#) && svg.contains(">p99 250 ms</text>"));
        // Latency that grows at the highest level is the signal, never clipped.
        let growing = vec![level(1.0, 5), level(2.0, 6), level(4.0, 400)];
        assert!(noisy_p99(&growing).is_empty());
    }

    #[test]
    fn geometric_levels_are_recognised() {
        assert!(grows_geometrically(&[1.0, 2.0, 4.0, 8.0, 16.0]));
        assert!(!grows_geometrically(&[10.0, 50.0, 100.0, 200.0, 400.0, 1000.0]), "steps of 5 then 2");
        assert!(!grows_geometrically(&[10.0, 20.0, 30.0, 40.0]));
        assert!(!grows_geometrically(&[1.0, 2.0, 4.0]), "spans less than ten times");
        assert!(grows_geometrically(&[25.0, 50.0, 100.0, 200.0, 400.0, 800.0]));
    }
}
