//! Output of `walden bench keys`: the result rows as Markdown tables for the terminal,
//! as a JSON array, and as a chart of WAL bytes per part, engine and key type (SVG and
//! PNG). The number formats, font lookup and axis ticks are `walden bench seed`'s.

use std::path::Path;

use comfy_table::presets::ASCII_MARKDOWN;
use comfy_table::{CellAlignment, Table};
use plotters::style::RGBColor;
use serde_json::{json, Value};

use super::Part;
use crate::seed_report::{
    align_markdown_right, draw_wal_chart, format_count, format_decimal, remove_if_present,
    write_file, ChartData, ChartError, SeedOutputs, Series, MIB, POSTGRES_COLORS, WALDEN_COLORS,
};
use crate::CliError;

/// What one part of the workload cost one engine, in one configuration, with one key type.
#[derive(Debug, Clone, PartialEq)]
pub struct KeysRow {
    /// "walden", "postgres" or "sqlite".
    pub engine: &'static str,
    /// The configuration, e.g. "default", "postgres/fpw-on" or "sqlite".
    pub config: String,
    /// "bigserial" or "uuid".
    pub key_type: &'static str,
    /// "load", "update_uniform", "update_skewed" or "lookup".
    pub part: &'static str,
    /// Statements the part ran.
    pub statements: u64,
    /// Rows in the table after the part (`count(*)`).
    pub rows: u64,
    /// Time of the statements (commits included; checkpoints not).
    pub seconds: f64,
    /// Time of the part's CHECKPOINTs: one before the part, and for the load one before
    /// every 100,000 rows.
    pub checkpoint_seconds: f64,
    /// Physical WAL from before the part's first checkpoint to its end: bytes that
    /// reached the WAL files (PostgreSQL: the insert position's advance; SQLite: frames).
    pub wal_bytes: u64,
    /// Logical WAL: the records before compression (PostgreSQL, SQLite: as physical).
    pub wal_logical_bytes: u64,
    /// The logical WAL of index pages (Walden's records and images that changed its
    /// B-tree); None where the engine does not say.
    pub index_wal_bytes: Option<u64>,
    /// Full-page images in the WAL (SQLite: every frame is one).
    pub page_images: u64,
    /// Undo appended to Walden's undo log over the part (undo tables; 0 elsewhere).
    pub undo_bytes: u64,
    /// Size of the table after the part.
    pub table_bytes: u64,
    /// Size of the primary key index after the part (SQLite: 0, the table is the index).
    pub index_bytes: u64,
}

/// The rows as a JSON array of objects, one per row, keys in the order of the fields.
pub fn to_json(rows: &[KeysRow]) -> Value {
    let objects = rows
        .iter()
        .map(|row| {
            json!({
                "engine": row.engine,
                "config": row.config,
                "key_type": row.key_type,
                "part": row.part,
                "statements": row.statements,
                "rows": row.rows,
                "seconds": row.seconds,
                "checkpoint_seconds": row.checkpoint_seconds,
                "wal_bytes": row.wal_bytes,
                "wal_logical_bytes": row.wal_logical_bytes,
                "index_wal_bytes": row.index_wal_bytes,
                "page_images": row.page_images,
                "undo_bytes": row.undo_bytes,
                "table_bytes": row.table_bytes,
                "index_bytes": row.index_bytes,
            })
        })
        .collect();
    Value::Array(objects)
}

/// The rows arranged as series (configuration and key type, in order of first
/// appearance) by parts (in workload order).
struct Grid<'a> {
    series: Vec<(&'a str, &'static str)>,
    parts: Vec<&'static str>,
    rows: &'a [KeysRow],
}

impl<'a> Grid<'a> {
    fn new(rows: &'a [KeysRow]) -> Grid<'a> {
        let mut series: Vec<(&str, &'static str)> = Vec::new();
        for row in rows {
            let s = (row.config.as_str(), row.key_type);
            if !series.contains(&s) {
                series.push(s);
            }
        }
        let parts = Part::ALL
            .iter()
            .map(|p| p.name())
            .filter(|name| rows.iter().any(|row| row.part == *name))
            .collect();
        Grid {
            series,
            parts,
            rows,
        }
    }

    /// The row of one part of one series; the first if the input repeats it.
    fn cell(&self, series: (&str, &str), part: &str) -> Option<&'a KeysRow> {
        self.rows
            .iter()
            .find(|row| row.config == series.0 && row.key_type == series.1 && row.part == part)
    }

    fn engine(&self, series: (&str, &str)) -> &'static str {
        self.rows
            .iter()
            .find(|row| row.config == series.0 && row.key_type == series.1)
            .map_or("walden", |row| row.engine)
    }
}

/// What one table shows.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Metric {
    Seconds,
    MicrosPerStatement,
    CheckpointSeconds,
    WalMib,
    WalLogicalMib,
    WalBytesPerStatement,
    IndexWalMib,
    PageImages,
    UndoMib,
    TableMib,
    IndexMib,
}

impl Metric {
    const ALL: [Metric; 11] = [
        Metric::Seconds,
        Metric::MicrosPerStatement,
        Metric::CheckpointSeconds,
        Metric::WalMib,
        Metric::WalLogicalMib,
        Metric::WalBytesPerStatement,
        Metric::IndexWalMib,
        Metric::PageImages,
        Metric::UndoMib,
        Metric::TableMib,
        Metric::IndexMib,
    ];

    fn title(self) -> &'static str {
        match self {
            Metric::Seconds => "seconds (the statements and their commits; checkpoints apart)",
            Metric::MicrosPerStatement => "microseconds per statement",
            Metric::CheckpointSeconds => {
                "checkpoint seconds (before the part; load: every 100,000 rows)"
            }
            Metric::WalMib => "WAL MiB, physical (bytes written to the WAL files)",
            Metric::WalLogicalMib => "logical WAL MiB",
            Metric::WalBytesPerStatement => "physical WAL bytes per statement",
            Metric::IndexWalMib => "index WAL MiB, logical (part of the logical WAL; Walden only)",
            Metric::PageImages => "page images in the WAL",
            Metric::UndoMib => "undo MiB (Walden's undo tables; not in the WAL figures)",
            Metric::TableMib => "table MiB after the part",
            Metric::IndexMib => "primary key index MiB after the part",
        }
    }

    /// The metric of a row; None where the row's engine does not report it.
    fn value(self, row: &KeysRow) -> Option<f64> {
        let per_statement = |x: f64| x / row.statements.max(1) as f64;
        Some(match self {
            Metric::Seconds => row.seconds,
            Metric::MicrosPerStatement => per_statement(row.seconds * 1e6),
            Metric::CheckpointSeconds => row.checkpoint_seconds,
            Metric::WalMib => row.wal_bytes as f64 / MIB,
            Metric::WalLogicalMib => row.wal_logical_bytes as f64 / MIB,
            Metric::WalBytesPerStatement => per_statement(row.wal_bytes as f64),
            Metric::IndexWalMib => row.index_wal_bytes? as f64 / MIB,
            Metric::PageImages => row.page_images as f64,
            Metric::UndoMib => row.undo_bytes as f64 / MIB,
            Metric::TableMib => row.table_bytes as f64 / MIB,
            Metric::IndexMib => row.index_bytes as f64 / MIB,
        })
    }

    fn format(self, value: f64) -> String {
        match self {
            // Counts stay far below 2^53, where f64 is still exact.
            Metric::PageImages => format_count(value as u64),
            Metric::Seconds | Metric::CheckpointSeconds => format_decimal(value, 3),
            Metric::MicrosPerStatement | Metric::WalBytesPerStatement => format_decimal(value, 1),
            _ => format_decimal(value, 2),
        }
    }
}

/// The workload as one line: how many statements each part ran.
fn describe(grid: &Grid<'_>) -> String {
    let parts: Vec<String> = grid
        .parts
        .iter()
        .map(|part| {
            let statements = grid
                .rows
                .iter()
                .find(|row| row.part == *part)
                .map_or(0, |row| row.statements);
            format!("{part} {}", format_count(statements))
        })
        .collect();
    format!(
        "statements: {}; 1,000 per transaction (lookups: one read transaction per 100,000)",
        parts.join(", ")
    )
}

/// The results as text: one Markdown table per metric, a row per configuration and key
/// type, a column per part.
pub fn render_table(rows: &[KeysRow]) -> String {
    let grid = Grid::new(rows);
    let mut out = format!("{}\n", describe(&grid));
    for metric in Metric::ALL {
        out.push_str(&format!("\n{}\n\n", metric.title()));
        out.push_str(&metric_table(&grid, metric));
    }
    out
}

fn metric_table(grid: &Grid<'_>, metric: Metric) -> String {
    let mut table = Table::new();
    table.load_preset(ASCII_MARKDOWN);
    let mut header = vec!["config", "key"];
    header.extend(grid.parts.iter().copied());
    table.set_header(header);
    for &series in &grid.series {
        let mut line = vec![series.0.to_string(), series.1.to_string()];
        for part in &grid.parts {
            let value = grid.cell(series, part).and_then(|row| metric.value(row));
            line.push(value.map_or_else(|| "-".to_string(), |v| metric.format(v)));
        }
        table.add_row(line);
    }
    for column in table.column_iter_mut().skip(2) {
        column.set_cell_alignment(CellAlignment::Right);
    }
    align_markdown_right(&table.to_string(), 2)
}

/// Writes keys.json, keys.svg and keys.png into `dir`, creating it if missing. A chart
/// that cannot be drawn (no font) is a warning: the numbers are in the JSON either way.
pub fn write_outputs(dir: &Path, rows: &[KeysRow]) -> Result<SeedOutputs, CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::io(format!("creating {}", dir.display()), e))?;
    let mut outputs = SeedOutputs::default();
    let json_path = dir.join("keys.json");
    let mut json_text = serde_json::to_string_pretty(&to_json(rows))
        .map_err(|e| CliError::io("bench keys", std::io::Error::other(e.to_string())))?;
    json_text.push('\n');
    write_file(&json_path, json_text.as_bytes())?;
    outputs.written.push(json_path);

    // A chart left by an earlier run must not pass for this run's if this one is skipped.
    let svg_path = dir.join("keys.svg");
    let png_path = dir.join("keys.png");
    remove_if_present(&svg_path)?;
    remove_if_present(&png_path)?;
    match draw_chart(rows, &svg_path, &png_path) {
        Ok(()) => outputs.written.extend([svg_path, png_path]),
        Err(e) => outputs.warnings.push(format!("chart skipped: {e}")),
    }
    Ok(outputs)
}

/// SQLite's bars, apart from both servers' colours.
const SQLITE_COLORS: [RGBColor; 2] = [RGBColor(188, 189, 34), RGBColor(127, 127, 127)];
/// One series per configuration and key type; a configuration's key types share its
/// colour, uuid lighter. Parts that wrote no WAL anywhere (lookups) are left out.
fn chart_data(rows: &[KeysRow]) -> Result<ChartData, ChartError> {
    let grid = Grid::new(rows);
    let parts: Vec<&'static str> = grid
        .parts
        .iter()
        .copied()
        .filter(|part| {
            rows.iter()
                .any(|row| row.part == *part && row.wal_bytes > 0)
        })
        .collect();
    if parts.is_empty() {
        return Err(ChartError::NoData);
    }
    // (engine, configuration) in order of first appearance: a configuration's place
    // among its engine's picks its colour.
    let mut configs: Vec<(&'static str, &str)> = Vec::new();
    let mut series = Vec::new();
    for &s in &grid.series {
        let engine = grid.engine(s);
        if !configs.contains(&(engine, s.0)) {
            configs.push((engine, s.0));
        }
        let nth = configs
            .iter()
            .filter(|(e, _)| *e == engine)
            .position(|(_, c)| *c == s.0)
            .unwrap_or(0);
        let palette: &[RGBColor] = match engine {
            "postgres" => &POSTGRES_COLORS,
            "sqlite" => &SQLITE_COLORS,
            _ => &WALDEN_COLORS,
        };
        let base = palette[nth % palette.len()];
        let color = if s.1 == "uuid" { lighter(base) } else { base };
        series.push(Series {
            label: format!("{} / {}", s.0, s.1),
            color,
            wal_bytes: parts
                .iter()
                .map(|part| grid.cell(s, part).map(|row| row.wal_bytes))
                .collect(),
        });
    }
    let loaded = rows
        .iter()
        .find(|row| row.part == "load")
        .map_or(0, |row| row.statements);
    Ok(ChartData {
        title: format!(
            "WAL per part, by key type (rows = {})",
            format_count(loaded)
        ),
        groups: parts.iter().map(|p| p.to_string()).collect(),
        series,
        legend_width: 270,
    })
}

/// Halfway to white.
fn lighter(c: RGBColor) -> RGBColor {
    let half = |x: u8| x + (255 - x) / 2;
    RGBColor(half(c.0), half(c.1), half(c.2))
}

/// Draws a grouped bar chart of WAL bytes per part (log scale) into an SVG file and a
/// PNG file, 1200 × 600 pixels each.
pub fn draw_chart(rows: &[KeysRow], svg_path: &Path, png_path: &Path) -> Result<(), ChartError> {
    draw_wal_chart(&chart_data(rows)?, svg_path, png_path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The field names of the JSON objects, in their order.
    const FIELDS: [&str; 15] = [
        "engine",
        "config",
        "key_type",
        "part",
        "statements",
        "rows",
        "seconds",
        "checkpoint_seconds",
        "wal_bytes",
        "wal_logical_bytes",
        "index_wal_bytes",
        "page_images",
        "undo_bytes",
        "table_bytes",
        "index_bytes",
    ];

    fn row(config: &str, key_type: &'static str, part: &'static str, wal_bytes: u64) -> KeysRow {
        let engine = match config {
            "sqlite" => "sqlite",
            c if c.starts_with("postgres") => "postgres",
            _ => "walden",
        };
        KeysRow {
            engine,
            config: config.to_string(),
            key_type,
            part,
            statements: 1_000_000,
            rows: 1_000_000,
            seconds: 12.5,
            checkpoint_seconds: 0.25,
            wal_bytes,
            wal_logical_bytes: wal_bytes * 2,
            index_wal_bytes: (engine == "walden").then_some(wal_bytes / 4),
            page_images: 1_234,
            undo_bytes: 0,
            table_bytes: 36 << 20,
            index_bytes: 21 << 20,
        }
    }

    fn full_run() -> Vec<KeysRow> {
        let mut rows = Vec::new();
        for config in ["default", "postgres/fpw-on", "postgres/fpw-off", "sqlite"] {
            for key in ["bigserial", "uuid"] {
                for (i, part) in Part::ALL.iter().enumerate() {
                    let wal = if *part == Part::Lookup {
                        0
                    } else {
                        (i as u64 + 1) << 26
                    };
                    rows.push(row(config, key, part.name(), wal));
                }
            }
        }
        rows
    }

    #[test]
    fn json_has_the_fields_in_order() {
        let json = to_json(&[row("default", "uuid", "load", 100 << 20)]);
        let object = json.as_array().and_then(|a| a[0].as_object()).cloned();
        let keys: Vec<String> = object
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        assert_eq!(keys, FIELDS);
        assert_eq!(
            json.to_string(),
            r#"[{"engine":"walden","config":"default","key_type":"uuid","part":"load","statements":1000000,"rows":1000000,"seconds":12.5,"checkpoint_seconds":0.25,"wal_bytes":104857600,"wal_logical_bytes":209715200,"index_wal_bytes":26214400,"page_images":1234,"undo_bytes":0,"table_bytes":37748736,"index_bytes":22020096}]"#
        );
    }

    #[test]
    fn tables_have_a_row_per_config_and_key_and_a_column_per_part() {
        let text = render_table(&full_run());
        for needle in [
            "statements: load 1,000,000, update_uniform 1,000,000, update_skewed 1,000,000, lookup 1,000,000;",
            "| config           | key       |   load | update_uniform | update_skewed | lookup |",
            "|------------------|-----------|-------:|---------------:|--------------:|-------:|",
            // 12.5 s over a million statements.
            "| default          | bigserial | 12.5 |           12.5 |          12.5 |   12.5 |",
            // 2^26 bytes are 64 MiB, 67.1 bytes a statement.
            "| postgres/fpw-on  | uuid      | 64.00 |         128.00 |        192.00 |   0.00 |",
            "| sqlite           | uuid      | 67.1 |          134.2 |         201.3 |    0.0 |",
            "| sqlite           | uuid      | 1,234 |          1,234 |         1,234 |  1,234 |",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
        assert_eq!(
            text.matches("| postgres/fpw-off | bigserial |").count(),
            11,
            "{text}"
        );
    }

    #[test]
    fn chart_leaves_out_parts_without_wal_and_pairs_colours() {
        let chart = chart_data(&full_run()).expect("chart data");
        assert_eq!(chart.groups, ["load", "update_uniform", "update_skewed"]);
        let labels: Vec<&str> = chart.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels[..3],
            [
                "default / bigserial",
                "default / uuid",
                "postgres/fpw-on / bigserial"
            ]
        );
        assert_eq!(chart.series[0].color, WALDEN_COLORS[0]);
        assert_eq!(chart.series[1].color, lighter(WALDEN_COLORS[0]));
        assert_eq!(chart.series[2].color, POSTGRES_COLORS[0]);
        assert_eq!(chart.series[4].color, POSTGRES_COLORS[1]);
        assert_eq!(chart.series[6].color, SQLITE_COLORS[0]);
        assert_eq!(
            chart.series[1].wal_bytes,
            [Some(1 << 26), Some(2 << 26), Some(3 << 26)]
        );
        let only_lookups = [row("default", "uuid", "lookup", 0)];
        assert!(matches!(chart_data(&only_lookups), Err(ChartError::NoData)));
    }

    #[test]
    fn write_outputs_writes_json_and_the_chart() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let rows = full_run();
        let outputs = write_outputs(dir.path(), &rows).expect("outputs");
        let json = std::fs::read_to_string(dir.path().join("keys.json")).expect("json");
        let parsed: Value = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(parsed, to_json(&rows));
        if crate::seed_report::ensure_font().is_err() {
            assert_eq!(
                outputs.warnings,
                [format!("chart skipped: {}", ChartError::NoFont)]
            );
            return;
        }
        assert!(outputs.warnings.is_empty(), "{:?}", outputs.warnings);
        let svg = std::fs::read_to_string(dir.path().join("keys.svg")).expect("svg");
        for label in ["postgres/fpw-off / uuid", "update_skewed", "100 MiB"] {
            assert!(svg.contains(label), "the SVG lacks {label:?}");
        }
        let png = std::fs::read(dir.path().join("keys.png")).expect("png");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    }
}
