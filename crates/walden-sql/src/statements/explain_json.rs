//! `EXPLAIN (FORMAT JSON)`: the plan EXPLAIN prints as PostgreSQL's text, given as
//! PostgreSQL's JSON (what explain visualisers and pgAdmin read): one array holding one
//! object with `"Plan"` (each node's `"Node Type"`, its relation, alias, index, scan
//! direction, join type or aggregate strategy, `"Plan Rows"` when estimates are shown,
//! `"Actual Total Time"`, `"Actual Rows"` and `"Actual Loops"` under ANALYZE, its
//! details such as `"Filter"` or `"Index Cond"`, and `"Plans"` below it), then
//! `"Planning Time"` and `"Execution Time"` under ANALYZE.
//!
//! It reads the text form's layout, which PostgreSQL fixes: a node's line is `->  `
//! six columns further in than its parent's (the top node has none), and its details
//! follow it two columns in from where its arrow stands. Walden has no cost figures, so
//! `"Startup Cost"` and `"Total Cost"` are absent, as `"Plan Rows"` is under COSTS OFF.

use std::fmt::Write as _;

/// A JSON value of the output.
enum Json {
    Text(String),
    Number(String),
    List(Vec<String>),
}

/// One plan node: its keys in order, and the nodes below it.
struct Node {
    depth: usize,
    keys: Vec<(String, Json)>,
    plans: Vec<usize>,
}

/// The text form's lines as PostgreSQL's JSON form.
pub(crate) fn to_json(lines: &[String]) -> String {
    let mut nodes: Vec<Node> = Vec::new();
    // The nodes from the top to the one last written, by depth.
    let mut path: Vec<usize> = Vec::new();
    let mut top: Vec<(String, Json)> = Vec::new();
    for line in lines {
        let text = line.trim_start();
        let indent = line.len() - text.len();
        let node_depth = match text.strip_prefix("->  ") {
            Some(_) => Some((indent + 4) / 6),
            None if indent == 0 && nodes.is_empty() => Some(0),
            None => None,
        };
        if let Some(depth) = node_depth {
            let label = text.strip_prefix("->  ").unwrap_or(text);
            let n = nodes.len();
            nodes.push(Node {
                depth,
                keys: node_keys(label),
                plans: Vec::new(),
            });
            while path.last().is_some_and(|&p| nodes[p].depth >= depth) {
                path.pop();
            }
            if let Some(&parent) = path.last() {
                nodes[parent].plans.push(n);
            }
            path.push(n);
            continue;
        }
        let (key, value) = match text.split_once(": ") {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (text.to_string(), String::new()),
        };
        if indent == 0 {
            // Planning Time: 0.465 ms
            let value = value.strip_suffix(" ms").unwrap_or(&value).to_string();
            top.push((key, number_or_text(value)));
            continue;
        }
        // A detail belongs to the last node of its depth.
        let depth = indent.saturating_sub(2) / 6;
        let owner = path
            .iter()
            .rev()
            .find(|&&p| nodes[p].depth <= depth)
            .or(path.last());
        if let Some(&owner) = owner {
            nodes[owner].keys.push(detail(key, value));
        }
    }
    let mut out = String::from("[\n  {\n");
    if !nodes.is_empty() {
        out.push_str("    \"Plan\": ");
        write_node(&nodes, 0, 4, &mut out);
        if !top.is_empty() {
            out.push(',');
        }
        out.push('\n');
    }
    for (i, (k, v)) in top.iter().enumerate() {
        let _ = write!(out, "    {}: ", quote(k));
        write_value(v, &mut out);
        if i + 1 < top.len() {
            out.push(',');
        }
        out.push('\n');
    }
    out.push_str("  }\n]");
    out
}

/// A detail as PostgreSQL's JSON gives it: sort and group keys as lists, counts as
/// numbers.
fn detail(key: String, value: String) -> (String, Json) {
    let value = match key.as_str() {
        "Sort Key" | "Group Key" | "Presorted Key" => Json::List(split_top(&value)),
        _ => number_or_text(value),
    };
    (key, value)
}

fn number_or_text(value: String) -> Json {
    if !value.is_empty() && value.parse::<f64>().is_ok_and(f64::is_finite) {
        Json::Number(value)
    } else {
        Json::Text(value)
    }
}

/// `a, f(b, c)` → `a`, `f(b, c)`: commas outside parentheses and quotes.
fn split_top(s: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let (mut depth, mut quoted, mut start) = (0i32, false, 0);
    for (i, c) in s.char_indices() {
        match c {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                parts.push(s[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(s[start..].trim().to_string());
    parts
}

/// The keys of a node's line: `Hash Left Join  (rows=5) (actual time=1.0 rows=3
/// loops=1)`.
fn node_keys(line: &str) -> Vec<(String, Json)> {
    let (label, mut rest) = match line.find("  (") {
        Some(i) => (&line[..i], &line[i + 2..]),
        None => (line, ""),
    };
    let mut keys = Vec::new();
    describe_label(label, &mut keys);
    while let Some(open) = rest.find('(') {
        let Some(close) = rest[open..].find(')') else {
            break;
        };
        let inside = &rest[open + 1..open + close];
        rest = &rest[open + close + 1..];
        if inside == "never executed" {
            for k in ["Actual Total Time", "Actual Rows", "Actual Loops"] {
                keys.push((k.to_string(), Json::Number("0".into())));
            }
            continue;
        }
        let actual = inside.starts_with("actual ");
        for part in inside.trim_start_matches("actual ").split(' ') {
            let Some((k, v)) = part.split_once('=') else {
                continue;
            };
            let key = match (k, actual) {
                ("rows", false) => "Plan Rows",
                ("time", true) => "Actual Total Time",
                ("rows", true) => "Actual Rows",
                ("loops", true) => "Actual Loops",
                _ => continue,
            };
            keys.push((key.to_string(), number_or_text(v.to_string())));
        }
    }
    keys
}

/// A node's name as PostgreSQL's JSON takes it apart: `Index Scan Backward using ix on
/// t a` is an Index Scan, backward, of index ix, relation t, alias a.
fn describe_label(label: &str, keys: &mut Vec<(String, Json)>) {
    let text = |s: &str| Json::Text(s.to_string());
    let (kind, index, relation) = match label.split_once(" using ") {
        Some((kind, rest)) => match rest.split_once(" on ") {
            Some((ix, rel)) => (kind, Some(ix), Some(rel)),
            None => (kind, Some(rest), None),
        },
        None => match label.split_once(" on ") {
            Some((kind, rel)) => (kind, None, Some(rel)),
            None => (label, None, None),
        },
    };
    let (kind, direction) = match kind.strip_suffix(" Backward") {
        Some(k) => (k, Some("Backward")),
        None if kind.starts_with("Index") => (kind, Some("Forward")),
        None => (kind, None),
    };
    let join = ["Left", "Right", "Full", "Semi", "Anti"]
        .into_iter()
        .find(|j| kind.ends_with(&format!(" {j} Join")));
    let (node_type, join_type) = match join {
        Some(j) => {
            let base = kind.trim_end_matches(&format!(" {j} Join"));
            let base = if base == "Nested Loop" {
                base.to_string()
            } else {
                format!("{base} Join")
            };
            (base, Some(j))
        }
        None if kind == "Nested Loop" || kind.ends_with(" Join") => {
            (kind.to_string(), Some("Inner"))
        }
        None => (kind.to_string(), None),
    };
    let (node_type, strategy) = match node_type.as_str() {
        "HashAggregate" => ("Aggregate".to_string(), Some("Hashed")),
        "GroupAggregate" => ("Aggregate".to_string(), Some("Sorted")),
        "Aggregate" => (node_type, Some("Plain")),
        _ => (node_type, None),
    };
    keys.push(("Node Type".into(), text(&node_type)));
    if let Some(s) = strategy {
        keys.push(("Strategy".into(), text(s)));
    }
    if let Some(j) = join_type {
        keys.push(("Join Type".into(), text(j)));
    }
    if let Some(d) = direction {
        keys.push(("Scan Direction".into(), text(d)));
    }
    if let Some(ix) = index {
        keys.push(("Index Name".into(), text(ix)));
    }
    if let Some(rel) = relation {
        let (name, alias) = match rel.split_once(' ') {
            Some((n, a)) => (n, a),
            None => (rel, rel),
        };
        match node_type.as_str() {
            "Subquery Scan" => {}
            "CTE Scan" => keys.push(("CTE Name".into(), text(name))),
            "Function Scan" => keys.push(("Function Name".into(), text(name))),
            _ => keys.push(("Relation Name".into(), text(name))),
        }
        keys.push(("Alias".into(), text(alias)));
    }
}

fn write_node(nodes: &[Node], n: usize, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent + 2);
    out.push_str("{\n");
    let node = &nodes[n];
    let count = node.keys.len() + usize::from(!node.plans.is_empty());
    for (i, (k, v)) in node.keys.iter().enumerate() {
        let _ = write!(out, "{pad}{}: ", quote(k));
        write_value(v, out);
        if i + 1 < count {
            out.push(',');
        }
        out.push('\n');
    }
    if !node.plans.is_empty() {
        let _ = writeln!(out, "{pad}\"Plans\": [");
        for (i, &child) in node.plans.iter().enumerate() {
            out.push_str(&" ".repeat(indent + 4));
            write_node(nodes, child, indent + 4, out);
            if i + 1 < node.plans.len() {
                out.push(',');
            }
            out.push('\n');
        }
        let _ = writeln!(out, "{pad}]");
    }
    out.push_str(&" ".repeat(indent));
    out.push('}');
}

fn write_value(v: &Json, out: &mut String) {
    match v {
        Json::Text(s) => out.push_str(&quote(s)),
        Json::Number(s) => out.push_str(s),
        Json::List(items) => {
            let items: Vec<String> = items.iter().map(|s| quote(s)).collect();
            let _ = write!(out, "[{}]", items.join(", "));
        }
    }
}

/// A JSON string.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn an_analyzed_join_as_postgresql_s_json() {
        let text = "\
Limit  (rows=3) (actual time=7.799 rows=3 loops=1)
  ->  HashAggregate  (rows=20) (actual time=7.799 rows=20 loops=1)
        Group Key: c.region, lower(c.name, 'a, b')
        ->  Nested Loop Left Join  (rows=326) (actual time=7.653 rows=990 loops=1)
              ->  Index Scan Backward using customers_pkey on customers c  (rows=33) (actual time=0.224 rows=99 loops=1)
                    Index Cond: (id < 100)
                    Rows Removed by Filter: 4
              ->  Seq Scan on orders  (never executed)
                    Filter: (status = \"x\")
Planning Time: 0.465 ms
Execution Time: 7.864 ms";
        let want = r#"[
  {
    "Plan": {
      "Node Type": "Limit",
      "Plan Rows": 3,
      "Actual Total Time": 7.799,
      "Actual Rows": 3,
      "Actual Loops": 1,
      "Plans": [
        {
          "Node Type": "Aggregate",
          "Strategy": "Hashed",
          "Plan Rows": 20,
          "Actual Total Time": 7.799,
          "Actual Rows": 20,
          "Actual Loops": 1,
          "Group Key": ["c.region", "lower(c.name, 'a, b')"],
          "Plans": [
            {
              "Node Type": "Nested Loop",
              "Join Type": "Left",
              "Plan Rows": 326,
              "Actual Total Time": 7.653,
              "Actual Rows": 990,
              "Actual Loops": 1,
              "Plans": [
                {
                  "Node Type": "Index Scan",
                  "Scan Direction": "Backward",
                  "Index Name": "customers_pkey",
                  "Relation Name": "customers",
                  "Alias": "c",
                  "Plan Rows": 33,
                  "Actual Total Time": 0.224,
                  "Actual Rows": 99,
                  "Actual Loops": 1,
                  "Index Cond": "(id < 100)",
                  "Rows Removed by Filter": 4
                },
                {
                  "Node Type": "Seq Scan",
                  "Relation Name": "orders",
                  "Alias": "orders",
                  "Actual Total Time": 0,
                  "Actual Rows": 0,
                  "Actual Loops": 0,
                  "Filter": "(status = \"x\")"
                }
              ]
            }
          ]
        }
      ]
    },
    "Planning Time": 0.465,
    "Execution Time": 7.864
  }
]"#;
        assert_eq!(to_json(&lines(text)), want);
    }

    #[test]
    fn a_plan_without_estimates() {
        let text = "Hash Join\n  Hash Cond: (o.cid = c.id)\n  ->  Seq Scan on o\n  ->  Hash\n        ->  Seq Scan on c";
        let json = to_json(&lines(text));
        assert!(json.contains("\"Node Type\": \"Hash Join\",\n      \"Join Type\": \"Inner\",\n      \"Hash Cond\": \"(o.cid = c.id)\",\n      \"Plans\": ["), "{json}");
        assert_eq!(json.matches("\"Node Type\"").count(), 4, "{json}");
        assert!(!json.contains("Plan Rows"), "{json}");
    }
}
