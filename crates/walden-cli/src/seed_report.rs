//! Output of `walden bench seed`: the result rows as tables for the terminal (and a
//! README, verbatim), as CSV and JSON files, as JSON for standard output, and as a chart
//! of WAL per statement in SVG and PNG.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use comfy_table::presets::ASCII_MARKDOWN;
use comfy_table::{CellAlignment, Table};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};
use serde_json::{json, Value};

use crate::CliError;

/// What one statement of the seed workload cost in one configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SeedRow {
    /// "walden" or "postgres".
    pub engine: &'static str,
    /// The configuration within the engine, e.g. "heap/cow" or "postgres/fpw-off".
    pub config: String,
    /// The kind of data in the rows: "lpad" or "random".
    pub data: &'static str,
    /// Rows of the seed table (the size of the workload, the same for all its statements).
    pub rows: u64,
    /// "create", "insert", "update_all", "update_sparse", "delete" or "vacuum".
    pub statement: &'static str,
    /// Physical WAL: the bytes that reached the WAL files (compressed frames and their
    /// headers).
    pub wal_bytes: u64,
    /// Logical WAL: the bytes of the records before compression (for PostgreSQL, its LSN
    /// delta, which is already logical).
    pub wal_logical_bytes: u64,
    pub page_images: u64,
    /// Undo appended by the statement (undo tables; 0 for heap tables and PostgreSQL).
    pub undo_bytes: u64,
    /// Undo written to files while the statement ran (past `undo_memory`), as seed 001
    /// measures zheap's undo writes.
    pub undo_file_bytes: u64,
    pub data_bytes_written: u64,
    /// Size of the table after the statement.
    pub table_bytes: u64,
    /// Size of the files holding the table after the statement: Walden's data file,
    /// PostgreSQL's table files (`pg_table_size`).
    pub file_bytes: u64,
    pub seconds: f64,
}

/// The statements in the order the workload runs them; tables and the chart list them so.
const WORKLOAD_ORDER: [&str; 6] = [
    "create",
    "insert",
    "update_all",
    "update_sparse",
    "delete",
    "vacuum",
];

/// The field names of CSV and JSON, in their order.
pub const FIELDS: [&str; 14] = [
    "engine",
    "config",
    "data",
    "rows",
    "statement",
    "wal_bytes",
    "wal_logical_bytes",
    "page_images",
    "undo_bytes",
    "undo_file_bytes",
    "data_bytes_written",
    "table_bytes",
    "file_bytes",
    "seconds",
];

pub(crate) const MIB: f64 = 1024.0 * 1024.0;

/// The rows as a JSON array of objects whose keys are [`FIELDS`], in that order.
pub fn to_json(rows: &[SeedRow]) -> Value {
    let objects = rows
        .iter()
        .map(|row| {
            json!({
                "engine": row.engine,
                "config": row.config,
                "data": row.data,
                "rows": row.rows,
                "statement": row.statement,
                "wal_bytes": row.wal_bytes,
                "wal_logical_bytes": row.wal_logical_bytes,
                "page_images": row.page_images,
                "undo_bytes": row.undo_bytes,
                "undo_file_bytes": row.undo_file_bytes,
                "data_bytes_written": row.data_bytes_written,
                "table_bytes": row.table_bytes,
                "file_bytes": row.file_bytes,
                "seconds": row.seconds,
            })
        })
        .collect();
    Value::Array(objects)
}

/// The rows as CSV: a header line of [`FIELDS`], then one line per row, fields quoted as
/// RFC 4180 says when they need it. Lines end in `\n`, which every CSV reader accepts.
pub fn to_csv(rows: &[SeedRow]) -> String {
    let mut out = FIELDS.join(",");
    out.push('\n');
    for row in rows {
        let fields = [
            csv_field(row.engine),
            csv_field(&row.config),
            csv_field(row.data),
            Cow::Owned(row.rows.to_string()),
            csv_field(row.statement),
            Cow::Owned(row.wal_bytes.to_string()),
            Cow::Owned(row.wal_logical_bytes.to_string()),
            Cow::Owned(row.page_images.to_string()),
            Cow::Owned(row.undo_bytes.to_string()),
            Cow::Owned(row.undo_file_bytes.to_string()),
            Cow::Owned(row.data_bytes_written.to_string()),
            Cow::Owned(row.table_bytes.to_string()),
            Cow::Owned(row.file_bytes.to_string()),
            // `Display` of f64 is the shortest text that reads back as the same number.
            Cow::Owned(row.seconds.to_string()),
        ];
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// One CSV field: quoted, with inner quotes doubled, if it holds a comma, a quote or a
/// line break; as it is otherwise.
fn csv_field(text: &str) -> Cow<'_, str> {
    if text.contains([',', '"', '\r', '\n']) {
        Cow::Owned(format!("\"{}\"", text.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(text)
    }
}

/// The rows of one workload run (one kind of data, one table size), arranged as
/// statements (in workload order) by configurations (in order of first appearance).
struct Workload<'a> {
    data: &'static str,
    rows: u64,
    configs: Vec<&'a str>,
    statements: Vec<&'static str>,
    cells: Vec<&'a SeedRow>,
}

impl<'a> Workload<'a> {
    /// The row of one statement in one configuration. If the input repeats it, the first.
    fn cell(&self, config: &str, statement: &str) -> Option<&'a SeedRow> {
        self.cells
            .iter()
            .copied()
            .find(|row| row.config == config && row.statement == statement)
    }

    fn describe(&self) -> String {
        format!("data = {}, rows = {}", self.data, format_count(self.rows))
    }
}

/// The rows grouped into workload runs, in order of first appearance.
fn workloads(rows: &[SeedRow]) -> Vec<Workload<'_>> {
    let mut runs: Vec<Workload<'_>> = Vec::new();
    for row in rows {
        let position = runs
            .iter()
            .position(|run| run.data == row.data && run.rows == row.rows);
        let run = match position {
            Some(i) => &mut runs[i],
            None => {
                runs.push(Workload {
                    data: row.data,
                    rows: row.rows,
                    configs: Vec::new(),
                    statements: Vec::new(),
                    cells: Vec::new(),
                });
                let last = runs.len() - 1;
                &mut runs[last]
            }
        };
        if !run.configs.contains(&row.config.as_str()) {
            run.configs.push(&row.config);
        }
        if !run.statements.contains(&row.statement) {
            run.statements.push(row.statement);
        }
        run.cells.push(row);
    }
    for run in &mut runs {
        sort_statements(&mut run.statements);
    }
    runs
}

/// Sorts statements into workload order; statements the workload does not know go last,
/// in the order they came (the sort is stable).
fn sort_statements(statements: &mut [&'static str]) {
    statements.sort_by_key(|statement| {
        WORKLOAD_ORDER
            .iter()
            .position(|known| known == statement)
            .unwrap_or(WORKLOAD_ORDER.len())
    });
}

/// What one table shows.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Metric {
    WalMib,
    WalLogicalMib,
    PageImages,
    UndoMib,
    DataWrittenMib,
    Seconds,
    TableMib,
    FileMib,
}

impl Metric {
    const ALL: [Metric; 8] = [
        Metric::WalMib,
        Metric::WalLogicalMib,
        Metric::PageImages,
        Metric::UndoMib,
        Metric::DataWrittenMib,
        Metric::Seconds,
        Metric::TableMib,
        Metric::FileMib,
    ];

    fn title(self) -> &'static str {
        match self {
            Metric::WalMib => "WAL MiB, physical (bytes written to the WAL files)",
            Metric::WalLogicalMib => "logical WAL MiB",
            Metric::PageImages => "page images in the WAL",
            Metric::UndoMib => "undo MiB",
            Metric::DataWrittenMib => "data written MiB",
            Metric::Seconds => "seconds",
            Metric::TableMib => "table MiB after the statement",
            Metric::FileMib => "data file MiB after the statement",
        }
    }

    fn value(self, row: &SeedRow) -> f64 {
        match self {
            Metric::WalMib => row.wal_bytes as f64 / MIB,
            Metric::WalLogicalMib => row.wal_logical_bytes as f64 / MIB,
            Metric::PageImages => row.page_images as f64,
            Metric::UndoMib => row.undo_bytes as f64 / MIB,
            Metric::DataWrittenMib => row.data_bytes_written as f64 / MIB,
            Metric::Seconds => row.seconds,
            Metric::TableMib => row.table_bytes as f64 / MIB,
            Metric::FileMib => row.file_bytes as f64 / MIB,
        }
    }

    fn format(self, value: f64) -> String {
        match self {
            // Counts stay far below 2^53, where f64 is still exact.
            Metric::PageImages => format_count(value as u64),
            // Milliseconds, so that a quick statement (create) is not 0.00.
            Metric::Seconds => format_decimal(value, 3),
            _ => format_decimal(value, 2),
        }
    }

    /// Whether a sum over the workload means something (a table's size does not add up).
    fn has_total(self) -> bool {
        !matches!(self, Metric::TableMib | Metric::FileMib)
    }
}

/// The results as text: for each workload run, one table per metric, statements as rows
/// and configurations as columns, with a total row for the metrics that add up. The
/// tables are Markdown, so a README can show the terminal output verbatim; each fits in
/// about 20 columns per configuration (160 for seven).
pub fn render_table(rows: &[SeedRow]) -> String {
    let mut out = String::new();
    for run in workloads(rows) {
        for metric in Metric::ALL {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!("{} ({})\n\n", metric.title(), run.describe()));
            out.push_str(&metric_table(&run, metric));
        }
    }
    out
}

/// One metric of one workload run as a Markdown table.
fn metric_table(run: &Workload<'_>, metric: Metric) -> String {
    let mut table = Table::new();
    table.load_preset(ASCII_MARKDOWN);
    let mut header = vec!["statement"];
    header.extend(run.configs.iter().copied());
    table.set_header(header);
    for &statement in &run.statements {
        let mut line = vec![statement.to_string()];
        for &config in &run.configs {
            line.push(match run.cell(config, statement) {
                Some(row) => metric.format(metric.value(row)),
                None => "-".to_string(),
            });
        }
        table.add_row(line);
    }
    if metric.has_total() {
        let mut line = vec!["total".to_string()];
        for &config in &run.configs {
            let sum: f64 = run
                .statements
                .iter()
                .filter_map(|statement| run.cell(config, statement))
                .map(|row| metric.value(row))
                .sum();
            line.push(metric.format(sum));
        }
        table.add_row(line);
    }
    for column in table.column_iter_mut().skip(1) {
        column.set_cell_alignment(CellAlignment::Right);
    }
    align_markdown_right(&table.to_string(), 1)
}

/// Marks the number columns right-aligned in the Markdown separator line (`|---:|`), which
/// comfy-table draws without alignment; the first `labels` columns stay as they are.
pub(crate) fn align_markdown_right(table: &str, labels: usize) -> String {
    let mut lines: Vec<String> = table.lines().map(str::to_string).collect();
    if let Some(separator) = lines.get_mut(1) {
        let mut cells: Vec<String> = separator.split('|').map(str::to_string).collect();
        // "|a|b|c|" splits into ["", a, b, c, ""]: the number columns are labels+1..len-1.
        let last = cells.len().saturating_sub(1);
        for cell in cells.iter_mut().take(last).skip(labels + 1) {
            if cell.len() > 1 && cell.chars().all(|c| c == '-') {
                cell.replace_range(cell.len() - 1.., ":");
            }
        }
        *separator = cells.join("|");
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// A count with thousands separators: 1,234,567.
pub(crate) fn format_count(value: u64) -> String {
    group_thousands(&value.to_string())
}

/// A number with a fixed number of decimals and thousands separators: 1,234.57.
pub(crate) fn format_decimal(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    let (sign, unsigned) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.as_str()),
    };
    let (integer, fraction) = match unsigned.split_once('.') {
        Some((integer, fraction)) => (integer, Some(fraction)),
        None => (unsigned, None),
    };
    let mut out = format!("{sign}{}", group_thousands(integer));
    if let Some(fraction) = fraction {
        out.push('.');
        out.push_str(fraction);
    }
    out
}

/// Inserts a comma every three digits from the right of a string of digits.
fn group_thousands(digits: &str) -> String {
    // A comma goes before each digit that starts a group of three counted from the right.
    let first_group_len = digits.len() % 3;
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && i % 3 == first_group_len {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The files [`write_outputs`] wrote, and what it skipped and why.
#[derive(Debug, Default)]
pub struct SeedOutputs {
    pub written: Vec<PathBuf>,
    /// One line each, for the caller to print as warnings (e.g. a chart skipped).
    pub warnings: Vec<String>,
}

impl SeedOutputs {
    /// Says on standard error what was written and what was skipped.
    pub fn announce(&self) {
        use std::io::Write;
        for w in &self.warnings {
            let _ = writeln!(std::io::stderr(), "walden: {w}");
        }
        for p in &self.written {
            let _ = writeln!(std::io::stderr(), "wrote {}", p.display());
        }
    }
}

/// Writes seed.csv, seed.json, seed.svg and seed.png into `dir`, creating it if missing.
/// A chart that cannot be drawn (no font on the system) is a warning, not an error: the
/// numbers are in the CSV and JSON files either way.
pub fn write_outputs(dir: &Path, rows: &[SeedRow]) -> Result<SeedOutputs, CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::io(format!("creating {}", dir.display()), e))?;
    let mut outputs = SeedOutputs::default();

    let csv_path = dir.join("seed.csv");
    write_file(&csv_path, to_csv(rows).as_bytes())?;
    outputs.written.push(csv_path);

    let json_path = dir.join("seed.json");
    let mut json_text = serde_json::to_string_pretty(&to_json(rows))
        .expect("a JSON value of strings and numbers always serializes");
    json_text.push('\n');
    write_file(&json_path, json_text.as_bytes())?;
    outputs.written.push(json_path);

    // A chart left by an earlier run must not pass for this run's if this one is skipped.
    let svg_path = dir.join("seed.svg");
    let png_path = dir.join("seed.png");
    remove_if_present(&svg_path)?;
    remove_if_present(&png_path)?;
    match draw_chart(rows, &svg_path, &png_path) {
        Ok(()) => outputs.written.extend([svg_path, png_path]),
        Err(e) => outputs.warnings.push(format!("chart skipped: {e}")),
    }
    Ok(outputs)
}

pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes).map_err(|e| CliError::io(format!("writing {}", path.display()), e))
}

pub(crate) fn remove_if_present(path: &Path) -> Result<(), CliError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(CliError::io(
            format!("removing the old {}", path.display()),
            e,
        )),
        _ => Ok(()),
    }
}

/// Why the chart could not be drawn.
#[derive(Debug)]
pub enum ChartError {
    /// No font to measure and draw the chart's text with.
    NoFont,
    /// No statement other than "create" to chart.
    NoData,
    /// The drawing or the file failed.
    Draw { path: PathBuf, reason: String },
}

impl std::fmt::Display for ChartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChartError::NoFont => write!(
                f,
                "no TrueType font found for the chart; install fonts-dejavu-core \
                 (or set {FONT_VARIABLE} to a .ttf file)"
            ),
            ChartError::NoData => write!(f, "no statement to chart"),
            ChartError::Draw { path, reason } => {
                write!(f, "drawing the chart into {}: {reason}", path.display())
            }
        }
    }
}

impl std::error::Error for ChartError {}

/// An environment variable naming the font file to use before the standard places.
const FONT_VARIABLE: &str = "WALDEN_CHART_FONT";

/// Where systems keep a plain sans-serif TrueType font: DejaVu Sans (Debian's
/// fonts-dejavu-core, Fedora, Arch), Liberation Sans, then macOS's and Windows' Arial.
const FONT_PATHS: [&str; 8] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "/Library/Fonts/Arial.ttf",
    "C:\\Windows\\Fonts\\arial.ttf",
];

/// Registers a system font as plotters' "sans-serif", once per process: plotters is built
/// without its system font lookup (which needs fontconfig and freetype), so it has no font
/// until one is registered.
pub(crate) fn ensure_font() -> Result<(), ChartError> {
    static FONT: OnceLock<Option<PathBuf>> = OnceLock::new();
    let found = FONT.get_or_init(|| {
        let mut candidates: Vec<PathBuf> = std::env::var_os(FONT_VARIABLE)
            .map(PathBuf::from)
            .into_iter()
            .collect();
        candidates.extend(FONT_PATHS.iter().map(PathBuf::from));
        register_first_font(&candidates)
    });
    match found {
        Some(_) => Ok(()),
        None => Err(ChartError::NoFont),
    }
}

/// Registers the first candidate that reads and parses as a font; returns its path.
fn register_first_font(candidates: &[PathBuf]) -> Option<PathBuf> {
    for path in candidates {
        let Ok(bytes) = std::fs::read(path) else {
            continue;
        };
        // plotters keeps fonts as &'static: the bytes live as long as the process. A
        // file that does not parse leaks too, which happens at most once per candidate.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        if register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
            return Some(path.clone());
        }
    }
    None
}

const CHART_SIZE: (u32, u32) = (1200, 600);
/// The width of one statement's group on the x axis, in axis units.
const GROUP: i32 = 1000;
const LEGEND_WIDTH: u32 = 230;

/// Bar colors: cool ones for Walden's configurations, warm ones for PostgreSQL's, so the
/// two engines read apart at a glance. Each engine's configurations take them in turn.
pub(crate) const WALDEN_COLORS: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(23, 190, 207),
    RGBColor(148, 103, 189),
    RGBColor(127, 127, 127),
];
pub(crate) const POSTGRES_COLORS: [RGBColor; 5] = [
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
];

/// What a WAL chart shows: one bar per series in each group (statements, or a
/// benchmark's parts), on a log scale. `bench seed` and `bench keys` draw one.
pub(crate) struct ChartData {
    pub title: String,
    pub groups: Vec<String>,
    pub series: Vec<Series>,
    /// Width of the legend right of the plot, in pixels.
    pub legend_width: u32,
}

pub(crate) struct Series {
    pub label: String,
    pub color: RGBColor,
    /// WAL bytes per group of `ChartData::groups`; None where it did not run.
    pub wal_bytes: Vec<Option<u64>>,
}

impl ChartData {
    /// One series per configuration of each workload run. "create" is left out: its few
    /// KiB say nothing about logging and would take a group's width.
    fn from_rows(rows: &[SeedRow]) -> Result<ChartData, ChartError> {
        let runs = workloads(rows);
        let mut statements: Vec<&'static str> = Vec::new();
        for run in &runs {
            for &statement in &run.statements {
                if statement != "create" && !statements.contains(&statement) {
                    statements.push(statement);
                }
            }
        }
        sort_statements(&mut statements);
        if statements.is_empty() {
            return Err(ChartError::NoData);
        }
        let (mut walden_count, mut postgres_count) = (0, 0);
        let mut series = Vec::new();
        for run in &runs {
            for &config in &run.configs {
                let wal_bytes: Vec<Option<u64>> = statements
                    .iter()
                    .map(|statement| run.cell(config, statement).map(|row| row.wal_bytes))
                    .collect();
                let is_postgres = run
                    .cells
                    .iter()
                    .any(|row| row.config == config && row.engine == "postgres");
                let color = if is_postgres {
                    postgres_count += 1;
                    POSTGRES_COLORS[(postgres_count - 1) % POSTGRES_COLORS.len()]
                } else {
                    walden_count += 1;
                    WALDEN_COLORS[(walden_count - 1) % WALDEN_COLORS.len()]
                };
                let label = if runs.len() == 1 {
                    config.to_string()
                } else {
                    format!("{config} ({}, {})", run.data, format_count(run.rows))
                };
                series.push(Series {
                    label,
                    color,
                    wal_bytes,
                });
            }
        }
        Ok(ChartData {
            title: chart_title(&runs),
            groups: statements.iter().map(|s| s.to_string()).collect(),
            series,
            legend_width: LEGEND_WIDTH,
        })
    }
}

/// "WAL per statement (rows = 1,000,000, data = lpad)"; several runs list their values.
fn chart_title(runs: &[Workload<'_>]) -> String {
    let mut sizes: Vec<String> = Vec::new();
    let mut kinds: Vec<&str> = Vec::new();
    for run in runs {
        let size = format_count(run.rows);
        if !sizes.contains(&size) {
            sizes.push(size);
        }
        if !kinds.contains(&run.data) {
            kinds.push(run.data);
        }
    }
    format!(
        "WAL per statement (rows = {}, data = {})",
        sizes.join(", "),
        kinds.join(", ")
    )
}

/// Draws a grouped bar chart of WAL bytes per statement (log scale) into an SVG file and
/// a PNG file, 1200 × 600 pixels each.
pub fn draw_chart(rows: &[SeedRow], svg_path: &Path, png_path: &Path) -> Result<(), ChartError> {
    draw_wal_chart(&ChartData::from_rows(rows)?, svg_path, png_path)
}

/// Draws a grouped bar chart of WAL bytes (log scale) into an SVG file and a PNG file,
/// 1200 × 600 pixels each.
pub(crate) fn draw_wal_chart(
    chart: &ChartData,
    svg_path: &Path,
    png_path: &Path,
) -> Result<(), ChartError> {
    ensure_font()?;
    let failed = |path: &Path| {
        let path = path.to_path_buf();
        move |reason: String| ChartError::Draw { path, reason }
    };
    draw_on(
        SVGBackend::new(svg_path, CHART_SIZE).into_drawing_area(),
        chart,
    )
    .map_err(failed(svg_path))?;
    draw_on(
        BitMapBackend::new(png_path, CHART_SIZE).into_drawing_area(),
        chart,
    )
    .map_err(failed(png_path))?;
    Ok(())
}

/// The y axis ticks: 1, 10 and 100 of each binary unit (B, KiB, MiB, ...), which label as
/// round numbers; `light` gets the 2s and 5s between them for the fine grid. Only those
/// from `low` to `high`: plotters draws grid lines outside the plot too.
fn byte_ticks(light: bool, low: f64, high: f64) -> Vec<f64> {
    let factors: &[f64] = if light {
        &[2.0, 5.0, 20.0, 50.0, 200.0, 500.0]
    } else {
        &[1.0, 10.0, 100.0]
    };
    (0..6)
        .flat_map(|power| {
            let unit = 1024f64.powi(power);
            factors.iter().map(move |factor| factor * unit)
        })
        .filter(|tick| (low..=high).contains(tick))
        .collect()
}

/// The y range: from the tick at or below the smallest bar to the tick above the largest.
fn byte_range(chart: &ChartData) -> (f64, f64) {
    let values = chart
        .series
        .iter()
        .flat_map(|series| series.wal_bytes.iter().flatten())
        .filter(|&&bytes| bytes > 0)
        .map(|&bytes| bytes as f64);
    let (smallest, largest) =
        values.fold((f64::MAX, 0f64), |(low, high), v| (low.min(v), high.max(v)));
    if largest == 0.0 {
        return (1.0, 1024.0);
    }
    let ticks = byte_ticks(false, 0.0, f64::MAX);
    let low = ticks.iter().rev().find(|&&t| t <= smallest).copied();
    let high = ticks.iter().find(|&&t| t > largest).copied();
    (low.unwrap_or(1.0), high.unwrap_or(largest * 2.0))
}

/// A byte count as an axis label: "1 KiB", "100 MiB", "2.5 GiB".
fn format_bytes_short(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if (value - value.round()).abs() < 1e-9 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Draws the whole chart on one backend (SVG or bitmap) and writes its file.
fn draw_on<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    chart: &ChartData,
) -> Result<(), String> {
    let text = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(text)?;
    let (plot_area, legend_area) = root.split_horizontally(CHART_SIZE.0 - chart.legend_width);
    let groups = chart.groups.len();
    let (low, high) = byte_range(chart);
    // plotters formats only integer axes with custom key points, so x counts thousandths
    // of a group: group g is centred on g * GROUP, where its label goes.
    let group_count = groups as i32;
    let x_axis = (-GROUP / 2..group_count * GROUP - GROUP / 2)
        .with_key_points((0..group_count).map(|g| g * GROUP).collect());
    let y_log: LogCoord<f64> = (low..high).log_scale().into();
    let y_axis = y_log
        .with_key_points(byte_ticks(false, low, high))
        .with_light_points(byte_ticks(true, low, high));
    let mut plot = ChartBuilder::on(&plot_area)
        .caption(&chart.title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(100)
        .build_cartesian_2d(x_axis, y_axis)
        .map_err(text)?;
    let group_label = |x: &i32| {
        let group = usize::try_from(x.div_euclid(GROUP)).ok();
        let name = group.and_then(|g| chart.groups.get(g));
        name.map_or_else(String::new, |name| name.to_string())
    };
    plot.configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&group_label)
        .y_label_formatter(&|bytes| format_bytes_short(*bytes))
        .y_desc("WAL bytes (log scale)")
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(text)?;

    // Each group spans 80% of its width, split evenly among the series; a bar keeps a
    // tenth of its slot as a gap to its neighbour. A value below the axis (zero has no
    // logarithm) is clamped to it: a bar of no height.
    let slot = GROUP * 8 / 10 / i32::try_from(chart.series.len().max(1)).unwrap_or(i32::MAX);
    for (index, series) in (0i32..).zip(&chart.series) {
        let bars = (0i32..)
            .zip(&series.wal_bytes)
            .filter_map(|(group, bytes)| {
                let top = ((*bytes)? as f64).max(low);
                let left = group * GROUP - GROUP * 4 / 10 + index * slot;
                Some(Rectangle::new(
                    [(left + slot / 20, low), (left + slot - slot / 20, top)],
                    series.color.filled(),
                ))
            });
        plot.draw_series(bars).map_err(text)?;
    }
    draw_legend(&legend_area, chart).map_err(text)?;
    root.present().map_err(text)
}

/// The legend, right of the plot: a colour swatch and the label of each series.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &ChartData,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let top = 70;
    let line_height = 26;
    for (index, series) in chart.series.iter().enumerate() {
        let y = top + index as i32 * line_height;
        area.draw(&Rectangle::new(
            [(10, y), (28, y + 18)],
            series.color.filled(),
        ))?;
        let style = ("sans-serif", 16)
            .into_font()
            .into_text_style(area)
            .pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(series.label.as_str(), (36, y + 9), style))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(config: &str, statement: &'static str, wal_bytes: u64) -> SeedRow {
        let engine = if config.starts_with("postgres") {
            "postgres"
        } else {
            "walden"
        };
        SeedRow {
            engine,
            config: config.to_string(),
            data: "lpad",
            rows: 1_000_000,
            statement,
            wal_bytes,
            // Records compress to a third in the WAL files.
            wal_logical_bytes: wal_bytes * 3,
            page_images: 48_231,
            undo_bytes: 0,
            undo_file_bytes: 0,
            data_bytes_written: 325_058_970,
            table_bytes: 154_722_304,
            file_bytes: 160_000_000,
            seconds: 4.125,
        }
    }

    /// The seven configurations the bench compares, each running the whole workload.
    fn full_run() -> Vec<SeedRow> {
        let configs = [
            "heap/cow",
            "heap/full-page",
            "heap/none",
            "default",
            "postgres/fpw-on",
            "postgres/fpw-off",
            "postgres/lz4",
        ];
        let mut rows = Vec::new();
        for (c, config) in configs.iter().enumerate() {
            for (s, statement) in WORKLOAD_ORDER.iter().enumerate() {
                let wal_bytes = if *statement == "create" {
                    8_192
                } else {
                    (c as u64 + 1) * (s as u64 + 1) * 50_000_000
                };
                rows.push(row(config, statement, wal_bytes));
            }
        }
        rows
    }

    #[test]
    fn json_has_the_fields_in_order_with_their_values() {
        let json = to_json(&[row("heap/cow", "insert", 132_138_993)]);
        let objects = json.as_array().expect("an array");
        assert_eq!(objects.len(), 1);
        let object = objects[0].as_object().expect("an object");
        let keys: Vec<&str> = object.keys().map(String::as_str).collect();
        assert_eq!(keys, FIELDS);
        assert_eq!(
            json.to_string(),
            r#"[{"engine":"walden","config":"heap/cow","data":"lpad","rows":1000000,"statement":"insert","wal_bytes":132138993,"wal_logical_bytes":396416979,"page_images":48231,"undo_bytes":0,"undo_file_bytes":0,"data_bytes_written":325058970,"table_bytes":154722304,"file_bytes":160000000,"seconds":4.125}]"#
        );
    }

    #[test]
    fn csv_has_a_header_and_one_line_per_row() {
        let csv = to_csv(&[row("heap/cow", "insert", 132_138_993)]);
        assert_eq!(
            csv,
            "engine,config,data,rows,statement,wal_bytes,wal_logical_bytes,page_images,undo_bytes,undo_file_bytes,data_bytes_written,table_bytes,file_bytes,seconds\n\
             walden,heap/cow,lpad,1000000,insert,132138993,396416979,48231,0,0,325058970,154722304,160000000,4.125\n"
        );
    }

    #[test]
    fn csv_quotes_commas_quotes_and_line_breaks() {
        assert_eq!(csv_field("heap/cow"), "heap/cow");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        let csv = to_csv(&[row("odd,config", "insert", 1)]);
        let line = csv.lines().nth(1).expect("a data line");
        assert!(line.starts_with("walden,\"odd,config\",lpad,"), "{line}");
    }

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(format_count(0), "0");
        assert_eq!(format_count(999), "999");
        assert_eq!(format_count(48_231), "48,231");
        assert_eq!(format_count(1_234_567), "1,234,567");
        assert_eq!(format_decimal(395.214, 2), "395.21");
        assert_eq!(format_decimal(1234.567, 2), "1,234.57");
        assert_eq!(format_decimal(-1234.5, 1), "-1,234.5");
        assert_eq!(format_bytes_short(1024.0), "1 KiB");
        assert_eq!(format_bytes_short(100.0 * MIB), "100 MiB");
        assert_eq!(format_bytes_short(2.5 * 1024.0 * MIB), "2.5 GiB");
    }

    #[test]
    fn table_shows_every_config_and_statement_with_formatted_numbers() {
        let mut rows = vec![
            row("heap/cow", "vacuum", 5 * 1024 * 1024),
            row("heap/cow", "insert", 132_138_993),
            row("postgres/fpw-on", "insert", 414_412_800),
        ];
        rows[2].page_images = 1_234_567;
        rows[2].seconds = 0.675;
        let text = render_table(&rows);
        for needle in [
            "WAL MiB, physical (bytes written to the WAL files) (data = lpad, rows = 1,000,000)",
            "logical WAL MiB (data = lpad, rows = 1,000,000)",
            "page images in the WAL (data = lpad, rows = 1,000,000)",
            "table MiB after the statement (data = lpad, rows = 1,000,000)",
            "| statement | heap/cow | postgres/fpw-on |",
            // 132,138,993 B = 126.02 MiB; 414,412,800 B = 395.21 MiB.
            "| insert    |   126.02 |          395.21 |",
            // The sparse run has no vacuum row for PostgreSQL.
            "| vacuum    |     5.00 |               - |",
            "| total     |   131.02 |          395.21 |",
            // Three times as much logical WAL: 378.05 MiB and 1,185.64 MiB.
            "| insert    |   378.05 |        1,185.64 |",
            "| total     |   393.05 |        1,185.64 |",
            "| insert    |   48,231 |       1,234,567 |",
            "| insert    |    4.125 |           0.675 |",
            "|-----------|---------:|----------------:|",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
        // Statements in workload order although vacuum came first.
        let wal = text.split("\n\n").nth(1).expect("the WAL table");
        assert!(wal.contains("|   126.02 |"), "{wal}");
        let insert = wal.find("| insert").expect("insert");
        let vacuum = wal.find("| vacuum").expect("vacuum");
        assert!(insert < vacuum, "{wal}");
        // The logical WAL table comes right after the physical one.
        let titles: Vec<&str> = text
            .lines()
            .filter(|line| line.contains("(data = "))
            .collect();
        assert_eq!(
            titles[..2],
            [
                "WAL MiB, physical (bytes written to the WAL files) (data = lpad, rows = 1,000,000)",
                "logical WAL MiB (data = lpad, rows = 1,000,000)",
            ]
        );
        let logical = text.split("\n\n").nth(3).expect("the logical WAL table");
        assert!(logical.contains("|   378.05 |"), "{logical}");
        // The table's size is not summed.
        let size_table = text.split("table MiB after").nth(1).expect("size table");
        assert!(!size_table.contains("total"), "{size_table}");
    }

    #[test]
    fn table_of_seven_configurations_fits_160_columns() {
        let text = render_table(&full_run());
        let widest = text.lines().map(|line| line.chars().count()).max();
        assert!(widest.is_some_and(|w| w <= 160), "{widest:?}\n{text}");
        // One row per table: physical and logical WAL, page images, undo, data written,
        // seconds, table size and data file size.
        assert_eq!(text.matches("| update_sparse |").count(), 8, "{text}");
    }

    #[test]
    fn separate_runs_get_separate_tables() {
        let mut rows = vec![row("heap/cow", "insert", 1)];
        let mut random = row("heap/cow", "insert", 2);
        random.data = "random";
        rows.push(random);
        let text = render_table(&rows);
        for data in ["lpad", "random"] {
            for title in [
                "WAL MiB, physical (bytes written to the WAL files)",
                "logical WAL MiB",
            ] {
                let heading = format!("\n{title} (data = {data},");
                assert_eq!(
                    format!("\n{text}").matches(&heading).count(),
                    1,
                    "{heading:?} in {text}"
                );
            }
        }
        let chart = ChartData::from_rows(&rows).expect("chart data");
        let labels: Vec<&str> = chart.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels,
            ["heap/cow (lpad, 1,000,000)", "heap/cow (random, 1,000,000)"]
        );
        assert_eq!(
            chart.title,
            "WAL per statement (rows = 1,000,000, data = lpad, random)"
        );
    }

    #[test]
    fn chart_data_leaves_out_create_and_keeps_zero_on_the_scale() {
        let mut rows = full_run();
        rows.push(row("heap/cow", "checkpoint", 0));
        let chart = ChartData::from_rows(&rows).expect("chart data");
        assert_eq!(
            chart.groups,
            [
                "insert",
                "update_all",
                "update_sparse",
                "delete",
                "vacuum",
                "checkpoint"
            ]
        );
        assert_eq!(chart.series.len(), 7);
        assert_eq!(chart.series[0].wal_bytes[0], Some(100_000_000));
        assert_eq!(chart.series[1].wal_bytes[5], None);
        assert_eq!(
            chart.title,
            "WAL per statement (rows = 1,000,000, data = lpad)"
        );
        // Zero is left out of the range: 100,000,000 B lies between 10 MiB and 100 MiB.
        assert_eq!(byte_range(&chart), (10.0 * MIB, 10.0 * 1024.0 * MIB));
        let only_create = [row("heap/cow", "create", 8192)];
        assert!(matches!(
            ChartData::from_rows(&only_create),
            Err(ChartError::NoData)
        ));
    }

    #[test]
    fn missing_font_is_reported_with_the_package_to_install() {
        let nowhere = [PathBuf::from("/nonexistent/walden/font.ttf")];
        assert_eq!(register_first_font(&nowhere), None);
        let message = ChartError::NoFont.to_string();
        assert!(
            message.starts_with("no TrueType font found for the chart; install fonts-dejavu-core"),
            "{message}"
        );
    }

    #[test]
    fn write_outputs_writes_csv_json_and_the_chart() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let out = dir.path().join("new/seed-out");
        let rows = full_run();
        let outputs = write_outputs(&out, &rows).expect("outputs");
        let csv = std::fs::read_to_string(out.join("seed.csv")).expect("csv");
        assert_eq!(csv, to_csv(&rows));
        let json = std::fs::read_to_string(out.join("seed.json")).expect("json");
        let parsed: Value = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(parsed, to_json(&rows));

        if ensure_font().is_err() {
            assert_eq!(
                outputs.written,
                [out.join("seed.csv"), out.join("seed.json")]
            );
            assert_eq!(
                outputs.warnings,
                [format!("chart skipped: {}", ChartError::NoFont)]
            );
            return;
        }
        assert!(outputs.warnings.is_empty(), "{:?}", outputs.warnings);
        let names: Vec<PathBuf> = ["seed.csv", "seed.json", "seed.svg", "seed.png"]
            .iter()
            .map(|name| out.join(name))
            .collect();
        assert_eq!(outputs.written, names);
        let svg = std::fs::read_to_string(out.join("seed.svg")).expect("svg");
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
        for label in ["heap/full-page", "postgres/lz4", "update_sparse", "100 MiB"] {
            assert!(svg.contains(label), "the SVG lacks {label:?}");
        }
        let png = std::fs::read(out.join("seed.png")).expect("png");
        assert!(png.len() > 10_000, "{} bytes", png.len());
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    }
}
