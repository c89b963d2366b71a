//! SVG charts for reports, drawn with plotters: horizontal bars on a log scale (sizes,
//! times), stacked shares (where a query's time went), and lines through measured points
//! on log-log axes (a time against a count). A value that was not measured (`None`) draws
//! no bar or point and is labelled `unknown`.
//!
//! Every measured bar, share and point names its value on hover: plotters' SVG has no
//! titles, so each gets a transparent twin carrying a `<title>` ([`HoverTarget`]), drawn
//! over the chart (a browser shows a title as a tooltip; other viewers ignore it).

use std::fmt::Write as _;

use anyhow::{Result, anyhow};
use plotters::coord::combinators::BindKeyPoints as _;
use plotters::coord::ranged1d::{IntoSegmentedCoord as _, SegmentValue};
use plotters::prelude::*;

use crate::units::compact;

const WIDTH: u32 = 760;
/// Pixels per bar, and per category label column.
const ROW: u32 = 22;
const LABELS: u32 = 230;
const COLORS: [RGBColor; 3] = [RGBColor(0x4e, 0x79, 0xa7), RGBColor(0xf2, 0x8e, 0x2b), RGBColor(0x76, 0xb7, 0xb2)];

/// One category's values, one per series (`None`: not measured).
pub struct Bars {
    pub category: String,
    pub values: Vec<Option<f64>>,
}

/// Horizontal bars, one row per (category, series), on a log scale so that a 4 ms query
/// and a 30 s one both show.
pub fn log_bars(title: &str, unit: &str, series: &[&str], groups: &[Bars]) -> Result<String> {
    // A value that is not finite is as unknown as one not measured.
    let rows: Vec<(String, usize, Option<f64>)> = groups
        .iter()
        .flat_map(|group| {
            series.iter().enumerate().map(move |(index, name)| {
                let value = group.values.get(index).copied().flatten().filter(|value| value.is_finite());
                (format!("{} · {name}", group.category), index, value)
            })
        })
        .collect();
    if rows.is_empty() {
        return Ok(empty("nothing measured"));
    }
    let measured: Vec<f64> = rows.iter().filter_map(|row| row.2).filter(|value| *value > 0.0).collect();
    let max = measured.iter().copied().fold(1e-3, f64::max);
    let min = measured.iter().copied().fold(max, f64::min);
    // A decade of room on the left, and room on the right for the labels.
    let x_range = (min / 10.0)..(max * 10.0);
    let height = 80 + ROW * rows.len() as u32;
    let mut svg = String::new();
    let mut targets = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{title} ({unit}, log scale)"), ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(24)
            .y_label_area_size(LABELS)
            .build_cartesian_2d(x_range.clone().log_scale(), (0..rows.len()).into_segmented())
            .map_err(chart_error)?;
        let label = row_labels(rows.iter().map(|row| row.0.clone()));
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(rows.len())
            .y_label_formatter(&label)
            .x_label_formatter(&|value| compact(*value))
            .draw()
            .map_err(chart_error)?;
        for (index, (name, series_index, value)) in rows.iter().enumerate() {
            let row = rows.len() - 1 - index;
            let color = COLORS[series_index % COLORS.len()];
            let label = value.map_or("unknown".to_string(), |value| format!("{} {unit}", compact(value)));
            let end = value.filter(|value| *value > 0.0).unwrap_or(x_range.start);
            if value.is_some() {
                targets.push(HoverTarget::rect(
                    chart.backend_coord(&(x_range.start, SegmentValue::Exact(row))),
                    chart.backend_coord(&(end, SegmentValue::Exact(row + 1))),
                    format!("{name}: {label}"),
                ));
            }
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x_range.start, SegmentValue::Exact(row)), (end, SegmentValue::Exact(row + 1))],
                    color.filled(),
                )))
                .map_err(chart_error)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    label,
                    (end, SegmentValue::CenterOf(row)),
                    ("sans-serif", 12).into_font(),
                )))
                .map_err(chart_error)?;
        }
        root.present().map_err(chart_error)?;
    }
    Ok(with_hover_targets(svg, &targets))
}

/// Stacked shares of a whole, one row each, e.g. CPU / read wait / other of a query's
/// thread time. Shares are clamped to [0, 1] and drawn left to right; an unknown one
/// (`None`) draws nothing.
pub fn shares(title: &str, parts: [&str; 3], rows: &[(String, [Option<f64>; 3])]) -> Result<String> {
    if rows.is_empty() {
        return Ok(empty("nothing measured"));
    }
    let height = 80 + ROW * rows.len() as u32;
    let mut svg = String::new();
    let mut targets = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(24)
            .y_label_area_size(LABELS)
            .build_cartesian_2d(0f64..1f64, (0..rows.len()).into_segmented())
            .map_err(chart_error)?;
        let label = row_labels(rows.iter().map(|row| row.0.clone()));
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(rows.len())
            .y_label_formatter(&label)
            .x_label_formatter(&|share| format!("{:.0} %", share * 100.0))
            .draw()
            .map_err(chart_error)?;
        for (part, name) in parts.iter().enumerate() {
            let corners = |index: usize, values: &[Option<f64>; 3]| {
                let row = rows.len() - 1 - index;
                let start: f64 = values[..part].iter().copied().map(within_whole).sum::<f64>().min(1.0);
                let end = (start + within_whole(values[part])).min(1.0);
                [(start, SegmentValue::Exact(row)), (end, SegmentValue::Exact(row + 1))]
            };
            for (index, (row_name, values)) in rows.iter().enumerate() {
                let Some(share) = values[part].filter(|share| share.is_finite()) else { continue };
                let [from, to] = corners(index, values);
                targets.push(HoverTarget::rect(
                    chart.backend_coord(&from),
                    chart.backend_coord(&to),
                    format!("{row_name} · {name}: {:.1} %", share * 100.0),
                ));
            }
            let bars = rows
                .iter()
                .enumerate()
                .map(|(index, (_, values))| Rectangle::new(corners(index, values), COLORS[part].filled()));
            chart
                .draw_series(bars)
                .map_err(chart_error)?
                .label(*name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], COLORS[part].filled()));
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present().map_err(chart_error)?;
    }
    Ok(with_hover_targets(svg, &targets))
}

/// One row of [`strips`]: a category (a query) and each series' samples.
pub struct Strip {
    pub category: String,
    pub samples: Vec<Vec<f64>>,
}

/// Every sample of each series as a dot, the series of a category one above the other on
/// one log axis, each with its median as a bar across its dots: so that two runs' spreads,
/// and not only their medians, can be seen side by side. A sample that is not a positive
/// number is not drawn.
pub fn strips(title: &str, unit: &str, series: &[&str], rows: &[Strip]) -> Result<String> {
    let positive = |value: &f64| value.is_finite() && *value > 0.0;
    let measured: Vec<f64> =
        rows.iter().flat_map(|row| row.samples.iter().flatten().copied().filter(positive)).collect();
    if measured.is_empty() || series.is_empty() {
        return Ok(empty("nothing measured"));
    }
    let high = measured.iter().copied().fold(0.0, f64::max);
    let low = measured.iter().copied().fold(high, f64::min);
    // Whole decades, so that the axis is labelled at its powers of ten (a range between two
    // of them gets labels at a few arbitrary points, or crowded ones).
    let decade_below = 10f64.powf(low.log10().floor());
    let decade_above = 10f64.powf(high.log10().ceil()).max(decade_below * 10.0);
    let x_range = decade_below..decade_above;
    // Each row is 2 slots a series: series s sits at slot 2s + 1, the row's label at slot
    // `series.len()`, so that every position is an integer plotters labels. One more row's
    // slots on top, empty, hold the legend, so that it hides no sample.
    let slots = 2 * series.len() as i32;
    let total = slots * rows.len() as i32;
    let height = 80 + ROW * ((rows.len() + 1) * series.len()) as u32;
    let mut svg = String::new();
    let mut targets = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{title} ({unit}, log scale)"), ("sans-serif", 16))
            .margin(8)
            .margin_right(32)
            .x_label_area_size(24)
            .y_label_area_size(LABELS)
            .build_cartesian_2d(x_range.log_scale(), 0..total + slots)
            .map_err(chart_error)?;
        // Rows top down: row r's slots are counted from the bottom.
        let base = |row: usize| total - slots * (row as i32 + 1);
        let names: Vec<(i32, String)> = rows
            .iter()
            .enumerate()
            .map(|(row, strip)| (base(row) + series.len() as i32, strip.category.clone()))
            .collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels((total + slots) as usize + 1)
            .y_label_formatter(&|slot| {
                names.iter().find(|(at, _)| at == slot).map(|(_, name)| name.clone()).unwrap_or_default()
            })
            .x_label_formatter(&|value| compact(*value))
            .draw()
            .map_err(chart_error)?;
        for (index, name) in series.iter().enumerate() {
            let color = COLORS[index % COLORS.len()];
            let mut dots = Vec::new();
            for (row, strip) in rows.iter().enumerate() {
                let y = base(row) + 2 * (series.len() - 1 - index) as i32 + 1;
                let samples: Vec<f64> =
                    strip.samples.get(index).into_iter().flatten().copied().filter(positive).collect();
                for (run, &value) in samples.iter().enumerate() {
                    dots.push((value, y));
                    targets.push(HoverTarget {
                        shape: HoverShape::Circle(chart.backend_coord(&(value, y)), 5),
                        title: format!(
                            "{} · {name}: {} {unit} (sample {} of {})",
                            strip.category,
                            compact(value),
                            run + 1,
                            samples.len()
                        ),
                    });
                }
                if let Some(median) = crate::numbers::median_unsorted(samples.clone()) {
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            vec![(median, y - 1), (median, y + 1)],
                            BLACK.stroke_width(2),
                        )))
                        .map_err(chart_error)?;
                }
            }
            chart
                .draw_series(dots.into_iter().map(|dot| Circle::new(dot, 3, color.mix(0.7).filled())))
                .map_err(chart_error)?
                .label(*name)
                .legend(move |(x, y)| Circle::new((x + 5, y), 4, color.filled()));
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present().map_err(chart_error)?;
    }
    Ok(with_hover_targets(svg, &targets))
}

/// Colours of [`log_log_lines`]: more than [`COLORS`], since a chart holds a line per
/// query and design.
const LINE_COLORS: [RGBColor; 8] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xed, 0xc9, 0x48),
];

/// One line of [`log_log_lines`]: its name and its points (x, y), x rising; y is `None`
/// where it was not measured.
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, Option<f64>)>,
}

/// Lines through measured points on log-log axes, every point marked, a legend naming
/// each line: log on both axes so that a sweep from a hundred parts to a hundred thousand,
/// and times from a millisecond to seconds, all show. A point whose x or y is not a
/// positive number (not measured) is not drawn and breaks its line, so a gap shows where
/// a figure is unknown; a line with no point at all is named `unknown` in the legend.
pub fn log_log_lines(title: &str, x_label: &str, y_unit: &str, lines: &[Line]) -> Result<String> {
    let positive = |value: f64| value.is_finite() && value > 0.0;
    let drawable = |&(x, y): &(f64, Option<f64>)| y.filter(|y| positive(x) && positive(*y)).map(|y| (x, y));
    let measured: Vec<(f64, f64)> = lines.iter().flat_map(|line| line.points.iter().filter_map(drawable)).collect();
    if measured.is_empty() {
        return Ok(empty("nothing measured"));
    }
    // Room around the points: a fifth of a decade each side, more when every point is
    // at one value (a log axis over nothing has no scale).
    let range = |values: Vec<f64>| {
        let low = values.iter().copied().fold(f64::INFINITY, f64::min);
        let high = values.iter().copied().fold(0.0, f64::max);
        let margin = if high > low { 1.6 } else { 3.0 };
        (low / margin)..(high * margin)
    };
    let x_range = range(measured.iter().map(|point| point.0).collect());
    let y_range = range(measured.iter().map(|point| point.1).collect());
    let mut svg = String::new();
    let mut targets = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 460)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{title} (log-log)"), ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(
                x_range.clone().log_scale().with_key_points(log_key_points(&x_range)),
                y_range.clone().log_scale().with_key_points(log_key_points(&y_range)),
            )
            .map_err(chart_error)?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_unit)
            .x_label_formatter(&|value| compact(*value))
            .y_label_formatter(&|value| compact(*value))
            .draw()
            .map_err(chart_error)?;
        for (index, line) in lines.iter().enumerate() {
            let color = LINE_COLORS[index % LINE_COLORS.len()];
            // Runs of consecutive measured points: an unknown one ends a run.
            let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
            for point in &line.points {
                match (runs.last_mut(), drawable(point)) {
                    (Some(run), Some(point)) => run.push(point),
                    _ => runs.push(Vec::new()),
                }
            }
            for run in runs.iter().filter(|run| run.len() > 1) {
                chart
                    .draw_series(std::iter::once(PathElement::new(run.clone(), color.stroke_width(2))))
                    .map_err(chart_error)?;
            }
            let points: Vec<(f64, f64)> = line.points.iter().filter_map(drawable).collect();
            for &(x, y) in &points {
                targets.push(HoverTarget {
                    shape: HoverShape::Circle(chart.backend_coord(&(x, y)), 6),
                    title: format!("{}: {} {x_label}, {} {y_unit}", line.name, compact(x), compact(y)),
                });
            }
            let name = if points.is_empty() { format!("{} (unknown)", line.name) } else { line.name.clone() };
            chart
                .draw_series(points.into_iter().map(|point| Circle::new(point, 3, color.filled())))
                .map_err(chart_error)?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2)));
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(chart_error)?;
    }
    Ok(with_hover_targets(svg, &targets))
}

/// One run's figures on one line of [`runs_over_time`]: its median, the fastest and
/// slowest sample, and what its hover title adds (the verdict against the run before).
#[derive(Debug, Clone, PartialEq)]
pub struct RunPoint {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub note: String,
}

/// One line of [`runs_over_time`] (a query): a point per run, `None` where the run did
/// not measure it.
pub struct RunLine {
    pub name: String,
    pub points: Vec<Option<RunPoint>>,
}

/// Runs in the order they ran (x: `#1`, `#2`...), a line per query through its medians on
/// a log axis, each point with a bar from its fastest to its slowest sample. A run in
/// `breaks` (its inputs differ from the run before) starts a new line: nothing is drawn
/// from the run before it, so a change of inputs never reads as a change of speed. A run
/// where a line has no point (or not a positive median) breaks it too.
pub fn runs_over_time(title: &str, unit: &str, runs: &[String], lines: &[RunLine], breaks: &[usize]) -> Result<String> {
    let positive = |value: f64| value.is_finite() && value > 0.0;
    let drawable = |point: &Option<RunPoint>| point.clone().filter(|point| positive(point.median));
    let values: Vec<f64> = lines
        .iter()
        .flat_map(|line| line.points.iter().filter_map(drawable))
        .flat_map(|point| [point.median, point.min, point.max])
        .filter(|value| positive(*value))
        .collect();
    if values.is_empty() || runs.is_empty() {
        return Ok(empty("nothing measured"));
    }
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(0.0, f64::max);
    let margin = if high > low { 1.6 } else { 3.0 };
    // A band above the points, as tall as the legend, so that the legend hides none: the
    // chart grows by it and the axis runs on by as much of its log span.
    const PLOT: f64 = 370.0;
    let legend = 16.0 * lines.len() as f64 + 16.0;
    let (bottom, top) = (low / margin, high * margin);
    let y_range = bottom..top * (top / bottom).powf(legend / PLOT);
    let x_range = -0.5..(runs.len() as f64 - 0.5);
    // The lines side by side at each run, so that their bars do not hide each other.
    let spread = 0.2_f64.min(0.4 / lines.len().max(1) as f64);
    let offset = |index: usize| (index as f64 - (lines.len() as f64 - 1.0) / 2.0) * spread;
    let mut svg = String::new();
    let mut targets = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 460 + legend as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{title} ({unit}, log scale)"), ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(x_range, y_range.clone().log_scale().with_key_points(log_key_points(&y_range)))
            .map_err(chart_error)?;
        let run_label = |value: &f64| {
            let index = value.round();
            match (value - index).abs() < 1e-6 && index >= 0.0 && (index as usize) < runs.len() {
                true => format!("#{}", index as usize + 1),
                false => String::new(),
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(runs.len())
            .x_desc("runs in the order they started")
            .y_desc(unit)
            .x_label_formatter(&run_label)
            .y_label_formatter(&|value| compact(*value))
            .draw()
            .map_err(chart_error)?;
        for (index, line) in lines.iter().enumerate() {
            let color = LINE_COLORS[index % LINE_COLORS.len()];
            let x = |run: usize| run as f64 + offset(index);
            // Runs of consecutive drawn points: a break or a missing point ends one.
            let mut segments: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
            for (run, point) in line.points.iter().enumerate() {
                if breaks.contains(&run) {
                    segments.push(Vec::new());
                }
                match (segments.last_mut(), drawable(point)) {
                    (Some(segment), Some(point)) => segment.push((x(run), point.median)),
                    _ => segments.push(Vec::new()),
                }
            }
            for segment in segments.iter().filter(|segment| segment.len() > 1) {
                chart
                    .draw_series(std::iter::once(PathElement::new(segment.clone(), color.stroke_width(2))))
                    .map_err(chart_error)?;
            }
            let points: Vec<(usize, RunPoint)> =
                line.points.iter().enumerate().filter_map(|(run, point)| Some((run, drawable(point)?))).collect();
            for (run, point) in &points {
                // The spread as a thin bar, where both its ends are times.
                if positive(point.min) && positive(point.max) {
                    let (from, to) =
                        (chart.backend_coord(&(x(*run), point.min)), chart.backend_coord(&(x(*run), point.max)));
                    root.draw(&Rectangle::new([(from.0 - 1, from.1), (to.0 + 1, to.1)], color.mix(0.6).filled()))
                        .map_err(chart_error)?;
                }
                let run_id = runs.get(*run).map_or("", String::as_str);
                let mut title = format!(
                    "{} · {run_id}: median {} {unit} ({}–{} {unit})",
                    line.name,
                    compact(point.median),
                    compact(point.min),
                    compact(point.max)
                );
                if !point.note.is_empty() {
                    let _ = write!(title, ", {}", point.note);
                }
                targets.push(HoverTarget {
                    shape: HoverShape::Circle(chart.backend_coord(&(x(*run), point.median)), 6),
                    title,
                });
            }
            let name = if points.is_empty() { format!("{} (unknown)", line.name) } else { line.name.clone() };
            chart
                .draw_series(points.iter().map(|(run, point)| Circle::new((x(*run), point.median), 3, color.filled())))
                .map_err(chart_error)?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2)));
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(chart_error)?;
    }
    Ok(with_hover_targets(svg, &targets))
}

/// A measured mark's twin that names its value on hover: its shape in the chart's pixels
/// and the text of its `<title>`.
struct HoverTarget {
    shape: HoverShape,
    title: String,
}

enum HoverShape {
    /// Left, top, width, height.
    Rect(i32, i32, i32, i32),
    /// Centre and radius (larger than the drawn point, so that it is easy to reach).
    Circle((i32, i32), i32),
}

impl HoverTarget {
    /// The rectangle between two opposite corners, in either order.
    fn rect((x0, y0): (i32, i32), (x1, y1): (i32, i32), title: String) -> HoverTarget {
        // A bar of width 0 (a value at the axis' start) still gets a pixel to hover.
        let width = (x1 - x0).abs().max(1);
        HoverTarget { shape: HoverShape::Rect(x0.min(x1), y0.min(y1), width, (y1 - y0).abs()), title }
    }
}

/// The SVG with `targets` drawn last, transparent, in a group of class `values` (one
/// element per measured mark: what a page's test counts).
fn with_hover_targets(mut svg: String, targets: &[HoverTarget]) -> String {
    let Some(end) = svg.rfind("</svg>") else { return svg };
    let mut layer = String::from("<g class=\"values\" fill=\"#000\" fill-opacity=\"0\">\n");
    for target in targets {
        let mut title = String::new();
        // Writing into a String cannot fail.
        let _ = pulldown_cmark_escape::escape_html_body_text(&mut title, &target.title);
        let _ = match target.shape {
            HoverShape::Rect(x, y, width, height) => writeln!(
                layer,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{width}\" height=\"{height}\"><title>{title}</title></rect>"
            ),
            HoverShape::Circle((x, y), radius) => {
                writeln!(layer, "<circle cx=\"{x}\" cy=\"{y}\" r=\"{radius}\"><title>{title}</title></circle>")
            }
        };
    }
    layer.push_str("</g>\n");
    svg.insert_str(end, &layer);
    svg
}

/// Where a log axis over `range` is labelled: 1, 2 and 5 times each power of ten within
/// it, or its ends when none is (plotters labels a log axis at its powers of ten alone,
/// which leaves an axis within one decade, 180 to 240 QPS, without a number).
fn log_key_points(range: &std::ops::Range<f64>) -> Vec<f64> {
    let (low, high) = (range.start, range.end);
    if !(low.is_finite() && high.is_finite() && low > 0.0 && high > low) {
        return Vec::new();
    }
    let mut points = Vec::new();
    let mut decade = 10f64.powf(low.log10().floor());
    while decade <= high {
        for step in [1.0, 2.0, 5.0] {
            let point = decade * step;
            if point >= low && point <= high {
                points.push(point);
            }
        }
        decade *= 10.0;
    }
    if points.len() < 2 {
        // Two ends, rounded to two significant digits, inside the range.
        let round = |value: f64, up: bool| {
            let unit = 10f64.powf(value.log10().floor() - 1.0);
            if up { (value / unit).ceil() * unit } else { (value / unit).floor() * unit }
        };
        points.extend([round(low, true), round(high, false)]);
        points.sort_by(f64::total_cmp);
        points.dedup();
    }
    // Many decades: powers of ten alone, so that labels do not crowd.
    if points.len() > 12 {
        points.retain(|point| (point.log10() - point.log10().round()).abs() < 1e-9);
    }
    points
}

/// The label of each row on a segmented axis, first row at the top (plotters counts rows
/// from the bottom).
fn row_labels(names: impl DoubleEndedIterator<Item = String>) -> impl Fn(&SegmentValue<usize>) -> String {
    let names: Vec<String> = names.rev().collect();
    move |position| match position {
        SegmentValue::CenterOf(index) => names.get(*index).cloned().unwrap_or_default(),
        _ => String::new(),
    }
}

/// A share as drawn: within [0, 1], and nothing for one that was not measured.
fn within_whole(share: Option<f64>) -> f64 {
    share.filter(|share| share.is_finite()).map_or(0.0, |share| share.clamp(0.0, 1.0))
}

/// A chart that only says why there is nothing to draw.
pub fn empty(text: &str) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 40)).into_drawing_area();
        // Drawing text on a fresh white area cannot fail in memory; an error leaves it blank.
        let _ = root.fill(&WHITE);
        let _ = root.draw(&Text::new(text.to_string(), (10, 12), ("sans-serif", 14).into_font()));
        let _ = root.present();
    }
    svg
}

/// The series' names in a framed box at `position`, the same on every chart.
fn draw_legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Result<()> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(chart_error)
}

fn chart_error<E: std::error::Error>(error: E) -> anyhow::Error {
    anyhow!("cannot draw a chart: {error}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_on_a_log_scale_keep_small_values_visible_and_unknowns_labelled() {
        let groups = [
            Bars { category: "q1".to_string(), values: vec![Some(4.0), None] },
            Bars { category: "q3".to_string(), values: vec![Some(2630.0), Some(35.0)] },
        ];
        let svg = log_bars("Queries", "ms", &["direct I/O", "warm min"], &groups).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("log scale"), "{svg}");
        for label in ["4.0 ms", "2630 ms", "35.0 ms", "unknown", "q1 · direct I/O", "q3 · warm min"] {
            assert!(svg.contains(label), "{label} missing");
        }
        // The three measured bars name their values on hover; the unknown one has no twin.
        let values = &svg[svg.find("<g class=\"values\"").unwrap()..];
        assert_eq!(values.matches("<title>").count(), 3, "{values}");
        assert!(values.contains("<title>q3 · warm min: 35.0 ms</title>"), "{values}");
    }

    #[test]
    fn shares_are_drawn_within_the_chart_even_when_they_overflow() {
        let svg = shares("Share", ["CPU", "read wait", "other"], &[("q1".to_string(), [Some(1.2), Some(0.3), None])])
            .unwrap();
        assert!(svg.contains("CPU") && svg.contains("read wait"), "{svg}");
        // The two known shares name their values on hover, as measured (not as clamped).
        assert!(
            svg.contains("<title>q1 · CPU: 120.0 %</title>") && svg.contains("<title>q1 · read wait: 30.0 %</title>")
        );
        assert_eq!(svg.matches("<title>").count(), 2, "{svg}");
    }

    #[test]
    fn lines_mark_their_points_and_name_a_line_with_none_unknown() {
        let lines = [
            Line {
                name: "q1 · by_day".to_string(),
                points: vec![(200.0, Some(1.5)), (2_000.0, None), (20_000.0, Some(9.0))],
            },
            Line { name: "q2 · by_day".to_string(), points: vec![(200.0, None)] },
        ];
        let svg = log_log_lines("Duration", "active parts", "ms", &lines).unwrap();
        assert!(
            svg.contains("log-log") && svg.contains("q1 · by_day") && svg.contains("q2 · by_day (unknown)"),
            "{svg}"
        );
        // Two measured points of q1, each a circle and its hover twin; the unknown one draws
        // none.
        assert_eq!(svg.matches("<circle").count(), 4, "{svg}");
        assert!(svg.contains("<title>q1 · by_day: 200 active parts, 1.5 ms</title>"), "{svg}");
        assert!(log_log_lines("Duration", "active parts", "ms", &lines[1..]).unwrap().contains("nothing measured"));
    }

    #[test]
    fn strips_mark_every_sample_and_skip_what_is_not_a_time() {
        let rows = [
            Strip { category: "q1".to_string(), samples: vec![vec![2.0, 2.5, 3.0], vec![1.0, f64::NAN]] },
            Strip { category: "q2".to_string(), samples: vec![vec![], vec![40.0]] },
        ];
        let svg = strips("Samples", "ms", &["A", "B"], &rows).unwrap();
        let values = &svg[svg.find("<g class=\"values\"").unwrap()..];
        assert_eq!(values.matches("<title>").count(), 5, "{values}");
        assert!(values.contains("<title>q1 · A: 2.5 ms (sample 2 of 3)</title>"), "{values}");
        assert!(values.contains("<title>q2 · B: 40.0 ms (sample 1 of 1)</title>"), "{values}");
        assert!(svg.contains("q1\n</text>") && svg.contains("q2\n</text>"), "{svg}");
        assert!(strips("Samples", "ms", &["A", "B"], &[]).unwrap().contains("nothing measured"));
    }

    fn run_point(median: f64, note: &str) -> Option<RunPoint> {
        Some(RunPoint { median, min: median * 0.8, max: median * 1.25, note: note.to_string() })
    }

    #[test]
    fn runs_over_time_mark_every_run_and_draw_no_line_across_a_break() {
        let runs: Vec<String> = ["r1", "r2", "r3"].map(str::to_string).to_vec();
        let lines = || {
            vec![
                RunLine {
                    name: "q1".to_string(),
                    points: vec![run_point(2.5, ""), run_point(2.6, "unchanged"), run_point(5.0, "break")],
                },
                RunLine { name: "q2".to_string(), points: vec![run_point(10.0, ""), None, run_point(12.0, "break")] },
            ]
        };
        let joined = runs_over_time("Median", "ms", &runs, &lines(), &[]).unwrap();
        let broken = runs_over_time("Median", "ms", &runs, &lines(), &[2]).unwrap();
        // Five measured points, each a circle and its hover twin.
        for svg in [&joined, &broken] {
            let values = &svg[svg.find("<g class=\"values\"").unwrap()..];
            assert_eq!(values.matches("<title>").count(), 5, "{values}");
            assert_eq!(svg.matches("<circle").count(), 10, "{svg}");
            assert!(svg.contains("#1") && svg.contains("#3") && svg.contains("log scale"), "{svg}");
        }
        assert!(joined.contains("<title>q1 · r2: median 2.6 ms (2.1–3.2 ms), unchanged</title>"), "{joined}");
        assert!(joined.contains("<title>q1 · r1: median 2.5 ms (2.0–3.1 ms)</title>"), "{joined}");
        // Without a break q1 is one line through three runs (q2's missing run breaks it);
        // with the break before run 3, q1's line ends at run 2, and none reaches run 3.
        let lines_of = |svg: &str| -> Vec<usize> {
            svg.split("<polyline").skip(1).map(|rest| rest[..rest.find("/>").unwrap()].matches(',').count()).collect()
        };
        assert!(lines_of(&joined).contains(&3), "{joined}");
        assert!(!lines_of(&broken).contains(&3), "{broken}");
        // Breaks before runs 2 and 3 leave q1 no line at all: one line fewer.
        let apart = runs_over_time("Median", "ms", &runs, &lines(), &[1, 2]).unwrap();
        assert_eq!(lines_of(&joined).len(), lines_of(&apart).len() + 1, "{apart}");
        assert!(runs_over_time("Median", "ms", &runs, &[], &[]).unwrap().contains("nothing measured"));
    }

    #[test]
    fn a_log_axis_within_one_decade_still_has_numbers() {
        assert_eq!(log_key_points(&(114.0..374.0)), vec![120.0, 200.0, 370.0]);
        assert_eq!(log_key_points(&(0.6..40.0)), vec![1.0, 2.0, 5.0, 10.0, 20.0]);
        assert!(log_key_points(&(1e-3..1e6)).iter().all(|point| (point.log10() - point.log10().round()).abs() < 1e-9));
    }

    #[test]
    fn text_is_escaped() {
        let svg = empty("a<b&c");
        assert!(svg.contains("a&lt;b&amp;c"), "{svg}");
    }
}
