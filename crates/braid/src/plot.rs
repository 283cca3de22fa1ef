//! `--plot`: per-path throughput and in-order goodput over time, like the
//! papers' figures, as a PNG. Text needs a TrueType font; the system's
//! DejaVu Sans is used (Debian: fonts-dejavu-core).

use std::path::Path;

use braid_sim::metrics::Report;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

fn font_path() -> Result<&'static str, String> {
    FONT_PATHS
        .iter()
        .copied()
        .find(|p| Path::new(p).is_file())
        .ok_or_else(|| {
            "--plot needs the DejaVu Sans font (Debian/Ubuntu: apt-get install fonts-dejavu-core)"
                .to_owned()
        })
}

fn load_font() -> Result<(), String> {
    let path = font_path()?;
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read font {path}: {e}"))?;
    // plotters keeps the font for the life of the process.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| "unreadable font file".to_owned())
}

/// Refuses, before anything is simulated, a plot that cannot be drawn: only
/// PNG is written, and its text needs a font.
pub fn check(file: &Path) -> Result<(), String> {
    if file.is_dir() {
        return Err(format!("--plot {}: is a directory", file.display()));
    }
    let png = file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    if !png {
        return Err(format!(
            "--plot {}: braid draws PNG only; give a file name ending in .png",
            file.display()
        ));
    }
    // Checked before the run, not after it.
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir.filter(|d| !d.is_dir()) {
        return Err(format!(
            "--plot {}: {} is not a directory",
            file.display(),
            dir.display()
        ));
    }
    // Opened for writing now (and removed again if it was not there), so a
    // file that cannot be written does not waste the run.
    let existed = file.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(file)
        .map_err(|e| format!("--plot {}: {e}", file.display()))?;
    if !existed {
        let _ = std::fs::remove_file(file);
    }
    font_path().map(|_| ())
}

pub fn draw(r: &Report, file: &Path) -> Result<(), String> {
    load_font()?;
    let err = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", file.display());
    let root = BitMapBackend::new(file, (1000, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let n = r.series.in_order_goodput_bps.len();
    let t_max = n as f64 * r.series.bin_s;
    let y_max = r
        .series
        .path_bps
        .iter()
        .flatten()
        .chain(&r.series.in_order_goodput_bps)
        .fold(0.0f64, |a, b| a.max(*b))
        / 1e6
        * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("braid bench: {} / {}", r.scheduler, r.cc),
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..t_max.max(0.1), 0.0..y_max.max(0.1))
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("Mbit/s")
        .draw()
        .map_err(|e| err(&e))?;
    let points = |v: &[f64]| -> Vec<(f64, f64)> {
        v.iter()
            .enumerate()
            .map(|(i, b)| (i as f64 * r.series.bin_s, b / 1e6))
            .collect()
    };
    for (i, (series, path)) in r.series.path_bps.iter().zip(&r.paths).enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(points(series), color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(format!("{} throughput", path.name))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .draw_series(LineSeries::new(
            points(&r.series.in_order_goodput_bps),
            BLACK.stroke_width(2),
        ))
        .map_err(|e| err(&e))?
        .label("in-order goodput")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
