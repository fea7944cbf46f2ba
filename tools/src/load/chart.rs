//! The picture a Locust user expects, three panels stacked over a shared time axis: requests per
//! second (and failures per second), p50/p99 latency, and users running, one point per second;
//! the plateau is shaded.
//!
//! `chart.svg` never needs a system font. With plotters' `ttf` feature, text *measurement* asks
//! the font library, but only the chart caption, the series legend and right-hand axis labels
//! measure text; this chart uses none of them: titles and legends are placed by hand, axis labels
//! sit on the left and bottom, and the SVG backend writes `<text>` elements that the viewer
//! renders. `chart.png` rasterises glyphs, so it needs a font: when none can be loaded it is
//! skipped with the reason (a panic inside the font stack is caught too).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::summary::{Charts, Summary};

/// The SVG chart's file name.
pub const SVG_FILE: &str = "chart.svg";
/// The PNG chart's file name.
pub const PNG_FILE: &str = "chart.png";
const SIZE: (u32, u32) = (1200, 960);
const TITLE_HEIGHT: u32 = 44;

const GREEN: RGBColor = RGBColor(44, 160, 44);
const DARK_GREEN: RGBColor = RGBColor(0, 90, 0);
const RED: RGBColor = RGBColor(214, 39, 40);
const BLUE: RGBColor = RGBColor(31, 119, 180);
const PURPLE: RGBColor = RGBColor(148, 103, 189);
const GREY: RGBColor = RGBColor(90, 90, 90);
const ORANGE: RGBColor = RGBColor(255, 127, 14);
const BROWN: RGBColor = RGBColor(140, 86, 75);
const PLATEAU: RGBAColor = RGBAColor(44, 160, 44, 0.10);
const DRAIN: RGBAColor = RGBAColor(120, 120, 120, 0.12);

/// A drawing failure, as text.
#[derive(Debug)]
struct ChartError(String);

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for ChartError {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        Self(e.to_string())
    }
}

/// Writes `DIR/chart.svg` and, when text can be rasterised, `DIR/chart.png`.
pub(crate) fn write(dir: &Path, summary: &Summary) -> Charts {
    let mut charts = Charts::default();
    let drawn = catch_unwind(AssertUnwindSafe(|| svg(summary)))
        .unwrap_or_else(|_| Err(ChartError("the SVG drawing panicked".into())));
    match drawn.and_then(|text| {
        std::fs::write(dir.join(SVG_FILE), text).map_err(|e| {
            ChartError(format!(
                "cannot write {}: {e}",
                dir.join(SVG_FILE).display()
            ))
        })
    }) {
        Ok(()) => charts.svg = Some(SVG_FILE.into()),
        Err(ChartError(why)) => charts.svg_error = Some(why),
    }
    let png_path = dir.join(PNG_FILE);
    let drawn = catch_unwind(AssertUnwindSafe(|| png(&png_path, summary)));
    match drawn {
        Ok(Ok(())) => charts.png = Some(PNG_FILE.into()),
        Ok(Err(ChartError(why))) => {
            let _ = std::fs::remove_file(&png_path);
            charts.png_skipped = Some(format!("the bitmap backend failed: {why}"));
        }
        Err(_) => {
            let _ = std::fs::remove_file(&png_path);
            charts.png_skipped = Some("the bitmap drawing panicked (font library)".into());
        }
    }
    charts
}

fn svg(summary: &Summary) -> Result<String, ChartError> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, SIZE).into_drawing_area();
        draw(&root, summary)?;
        root.present()?;
    }
    Ok(text)
}

fn png(path: &Path, summary: &Summary) -> Result<(), ChartError> {
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    draw(&root, summary)?;
    root.present()?;
    Ok(())
}

/// One panel's series.
struct Series<'a> {
    label: &'a str,
    color: RGBColor,
    points: Vec<(f64, f64)>,
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, s: &Summary) -> Result<(), ChartError> {
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(TITLE_HEIGHT);
    title.draw(&Text::new(
        title_text(s),
        (16, 12),
        font(18.0, HPos::Left, VPos::Top),
    ))?;

    let x_max = (s.time_series.len() as f64)
        .max(s.elapsed_s.max(s.settings.duration_s).ceil())
        .max(1.0);
    let points = |f: &dyn Fn(&super::summary::SecondPoint) -> Option<f64>| -> Vec<(f64, f64)> {
        s.time_series
            .iter()
            // Each point stands for the second [k, k + 1): drawn at its middle.
            .filter_map(|p| f(p).map(|v| (p.second as f64 + 0.5, v)))
            .collect()
    };
    let plateau = match (s.plateau.start_s, s.plateau.end_s) {
        (Some(a), Some(b)) => Some((a, b, s.plateau.requests_per_s)),
        _ => None,
    };
    let drain = (s.elapsed_s > s.load_s).then_some((s.load_s, s.elapsed_s));

    let panels = body.split_evenly((3, 1));
    let [rps, latency, users] = panels.as_slice() else {
        return Err(ChartError(
            "could not split the chart into three panels".into(),
        ));
    };
    panel(
        rps,
        "Requests per second (completed in each second)",
        "requests/s",
        Bands {
            x_max,
            plateau,
            drain,
            top: true,
            bottom: false,
        },
        &[
            Series {
                label: "requests/s",
                color: GREEN,
                points: points(&|p| Some(p.requests as f64)),
            },
            Series {
                label: "5 s average",
                color: DARK_GREEN,
                points: moving_average(s),
            },
            Series {
                label: "failures/s",
                color: RED,
                points: points(&|p| Some(p.failures as f64)),
            },
        ],
    )?;
    let streamed = s.ttft_ms.is_some();
    let mut latency_series = vec![
        Series {
            label: if streamed { "total p50" } else { "p50" },
            color: BLUE,
            points: points(&|p| p.p50_ms),
        },
        Series {
            label: if streamed { "total p99" } else { "p99" },
            color: PURPLE,
            points: points(&|p| p.p99_ms),
        },
    ];
    if streamed {
        latency_series.extend([
            Series {
                label: "TTFT p50",
                color: ORANGE,
                points: points(&|p| p.ttft_p50_ms),
            },
            Series {
                label: "TTFT p99",
                color: BROWN,
                points: points(&|p| p.ttft_p99_ms),
            },
        ]);
    }
    panel(
        latency,
        if streamed {
            "Total time and time to first token of the streams completed in each second"
        } else {
            "Response time of the requests completed in each second"
        },
        "latency (ms)",
        Bands {
            x_max,
            plateau: plateau.map(|(a, b, _)| (a, b, None)),
            drain,
            top: false,
            bottom: false,
        },
        &latency_series,
    )?;
    panel(
        users,
        "Users running",
        "users",
        Bands {
            x_max,
            plateau: plateau.map(|(a, b, _)| (a, b, None)),
            drain,
            top: false,
            bottom: true,
        },
        &[Series {
            label: "users",
            color: GREY,
            points: points(&|p| Some(f64::from(p.users))),
        }],
    )?;
    Ok(())
}

/// The shared time axis and what is shaded on it.
struct Bands {
    x_max: f64,
    /// Plateau start, end and (on the panel that labels it) its rate.
    plateau: Option<(f64, f64, Option<f64>)>,
    /// Users stopped sending → last completion.
    drain: Option<(f64, f64)>,
    /// The top panel labels the bands.
    top: bool,
    /// The bottom panel carries the x axis description.
    bottom: bool,
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    y_desc: &str,
    bands: Bands,
    series: &[Series<'_>],
) -> Result<(), ChartError> {
    let Bands {
        x_max,
        plateau,
        drain,
        top,
        bottom,
    } = bands;
    let y_top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0_f64, f64::max);
    let y_max = if y_top > 0.0 { y_top * 1.15 } else { 1.0 };

    let mut chart = ChartBuilder::on(area)
        .margin_top(30)
        .margin_right(30)
        .margin_left(10)
        .margin_bottom(4)
        .x_label_area_size(40)
        .y_label_area_size(72)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
    let decimals = if y_max >= 10.0 {
        0
    } else if y_max >= 1.0 {
        1
    } else {
        3
    };
    let y_format = move |v: &f64| format!("{v:.decimals$}");
    chart
        .configure_mesh()
        .x_desc(if bottom { "seconds since start" } else { "" })
        .y_desc(y_desc)
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 14))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(RGBColor(242, 242, 242))
        .max_light_lines(2)
        .x_labels(13)
        .y_labels(6)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&y_format)
        .draw()?;

    if let Some((start, end)) = drain {
        chart.draw_series(std::iter::once(Rectangle::new(
            [(start, 0.0), (end, y_max)],
            DRAIN.filled(),
        )))?;
        if top {
            chart.draw_series(std::iter::once(Text::new(
                "drain",
                (start, y_max * 0.97),
                font(12.0, HPos::Left, VPos::Top),
            )))?;
        }
    }

    if let Some((start, end, rate)) = plateau {
        chart.draw_series(std::iter::once(Rectangle::new(
            [(start, 0.0), (end, y_max)],
            PLATEAU.filled(),
        )))?;
        if let Some(rate) = rate {
            chart.draw_series(LineSeries::new(
                [(start, rate), (end, rate)],
                GREEN.mix(0.8).stroke_width(1),
            ))?;
            chart.draw_series(std::iter::once(Text::new(
                format!("plateau {rate:.2} req/s ({start:.1}–{end:.1} s)"),
                (start, y_max * 0.97),
                font(13.0, HPos::Left, VPos::Top),
            )))?;
        }
    }
    for s in series {
        chart.draw_series(LineSeries::new(
            s.points.iter().copied(),
            s.color.stroke_width(2),
        ))?;
    }

    area.draw(&Text::new(
        title.to_owned(),
        (84, 8),
        font(15.0, HPos::Left, VPos::Top),
    ))?;
    // The legend, placed by hand (measuring text would need a font).
    let mut x = 84 + text_width(title, 15.0) + 30;
    for s in series {
        area.draw(&PathElement::new(
            vec![(x, 16), (x + 22, 16)],
            s.color.stroke_width(3),
        ))?;
        area.draw(&Text::new(
            s.label.to_owned(),
            (x + 28, 9),
            font(13.0, HPos::Left, VPos::Top),
        ))?;
        x += 28 + text_width(s.label, 13.0) + 24;
    }
    Ok(())
}

/// Requests per second averaged over the 5 seconds centred on each second (completions arrive
/// in bursts when the server releases a batch of slots at once; per-second counts then alias).
fn moving_average(s: &Summary) -> Vec<(f64, f64)> {
    const HALF: usize = 2;
    let counts: Vec<f64> = s.time_series.iter().map(|p| p.requests as f64).collect();
    (HALF..counts.len().saturating_sub(HALF))
        .map(|k| {
            let window = &counts[k - HALF..=k + HALF];
            (
                k as f64 + 0.5,
                window.iter().sum::<f64>() / window.len() as f64,
            )
        })
        .collect()
}

fn title_text(s: &Summary) -> String {
    let set = &s.settings;
    if let Some(chat) = &set.chat {
        // The chat route's title has TTFT too: shorter parts, to fit the width.
        let mut t = format!(
            "turnstile load --chat{}: {} users at {}/s, {} s | {} requests",
            if chat.stream { " --stream" } else { "" },
            set.users,
            set.spawn_rate,
            set.duration_s,
            s.requests
        );
        if let Some(rate) = s.plateau.requests_per_s {
            t.push_str(&format!(", {rate:.2} req/s on the plateau"));
        }
        if let Some(ttft) = &s.ttft_ms {
            t.push_str(&format!(", TTFT p50 {:.0} ms", ttft.p50));
        }
        if let Some(l) = &s.latency_ms {
            t.push_str(&format!(", total p50 {:.0} ms", l.p50));
        }
        return t;
    }
    let mut t = format!(
        "turnstile load: {} users, spawn rate {}/s, {} s, POST {} | {} requests, {:.2} req/s overall",
        set.users, set.spawn_rate, set.duration_s, set.url, s.requests, s.requests_per_s
    );
    if let Some(rate) = s.plateau.requests_per_s {
        t.push_str(&format!(", {rate:.2} on the plateau"));
    }
    if let Some(l) = &s.latency_ms {
        t.push_str(&format!(", p50 {:.0} ms", l.p50));
    }
    t
}

fn font(size: f64, h: HPos, v: VPos) -> TextStyle<'static> {
    ("sans-serif", size)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(h, v))
}

/// A generous estimate of a sans-serif text's width in pixels, without a font.
fn text_width(text: &str, size: f64) -> i32 {
    // plotters' size is 1.24 em; sans-serif glyphs average about 0.6 em.
    let width = text.chars().count() as f64 * size / 1.24 * 0.62;
    width.ceil() as i32
}
