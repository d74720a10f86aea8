//! The HTML reports as a reader sees them: tables sit in boxes that
//! scroll rather than widen the page, long variant names wrap, durations read in human
//! units, and — when a Chromium is installed (`chromium`, `chromium-browser`, or
//! `$FLEETSIM_CHROMIUM`) — the page, laid out by headless Chromium at 1,024 px, is no
//! wider than the window and every table box ends inside the body. A screenshot of each
//! report is left in the test's temporary folder's parent (`$CARGO_TARGET_TMPDIR`) to check
//! by eye when the report changes.

use std::path::{Path, PathBuf};
use std::process::Command;

const SCENARIO: &str = r#"
name = "render"
seed = 3
[[fleet.cells]]
name = "a"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 4
[workload.synthetic]
jobs = 120
arrival_rate_per_hour = 30.0
tenants = [{ name = "x", weight = 1.0 }, { name = "y", weight = 1.0 }]
sizes = [{ gpus = 1, weight = 0.7 }, { gpus = 8, weight = 0.3 }]
runtime = { dist = "lognormal", median_s = 1800.0, sigma = 1.0, max_s = 36000.0 }
[metrics]
timeseries_interval_s = 3600
[sweep]
seeds = 1
[[sweep.axes]]
param = "policy.placement"
values = ["first-fit", "best-fit", "worst-fit"]
[[sweep.axes]]
param = "transforms.arrival_rate_scale"
values = [0.5, 1.0, 1.5, 2.0]
"#;

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FLEETSIM_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    ["chromium", "chromium-browser"].iter().find_map(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|_| PathBuf::from(b))
    })
}

/// Lays `report` out in headless Chromium inside a 1,024 px frame and returns what a probe
/// script measured; also writes a screenshot `shot`.
fn probe(browser: &Path, report: &Path, shot: &Path) -> serde_json::Value {
    let dir = report.parent().unwrap();
    let page = dir.join("probe.html");
    std::fs::write(
        &page,
        r#"<html><body><iframe id="f" src="report.html" style="width:1024px;height:800px;border:0"></iframe>
<pre id="out">pending</pre><script>
document.getElementById('f').onload = function () {
  var d = this.contentDocument, w = this.contentWindow, right = d.body.getBoundingClientRect().right;
  var boxes = Array.from(d.querySelectorAll('div.scroll'));
  document.getElementById('out').textContent = JSON.stringify({
    scrollWidth: d.documentElement.scrollWidth, innerWidth: w.innerWidth, boxes: boxes.length,
    outside: boxes.filter(function (b) { return b.getBoundingClientRect().right > right + 1; }).length});
};
</script></body></html>"#,
    )
    .unwrap();
    let flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--allow-file-access-from-files",
        "--virtual-time-budget=5000",
    ];
    let o = Command::new(browser)
        .args(flags)
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&o.stdout);
    let json = dom
        .split("<pre id=\"out\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .unwrap_or_else(|| panic!("no probe result: {dom}"));
    let _ = Command::new(browser)
        .args(flags)
        .arg("--window-size=1024,3000")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", report.display()))
        .output();
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

#[test]
fn reports_fit_the_page_and_read_in_human_units() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("s.toml");
    std::fs::write(&s, SCENARIO).unwrap();
    let long =
        "policy.placement=worst-fit+policy.queue_order=priority+policy.cell_selection=least-loaded";
    let cmp = d.path().join("cmp");
    let sweep = d.path().join("sweep");
    let bin = env!("CARGO_BIN_EXE_fleetsim");
    let o = Command::new(bin)
        .args(["compare", "--seeds", "1", "--policies"])
        .arg(format!("best-fit,{long}"))
        .arg("--out")
        .arg(&cmp)
        .arg(&s)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(bin)
        .args(["sweep", "--out"])
        .arg(&sweep)
        .arg(&s)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for dir in [&cmp, &sweep] {
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        // Every table is inside a scrolling box; headers and first columns may wrap.
        assert_eq!(
            html.matches("<table>").count(),
            html.matches("<div class=\"scroll\"><table>").count()
        );
        assert!(
            html.contains(".scroll{overflow-x:auto}") && html.contains("overflow-wrap:anywhere")
        );
        // Waits in human units in the tables (raw seconds stay in the CSV and JSON).
        let row = html
            .lines()
            .find(|l| l.contains("wait_s.p99") && l.starts_with("<tr>"))
            .or_else(|| html.lines().find(|l| l.starts_with("<tr><td>")))
            .unwrap();
        assert!(
            [
                " s<",
                " min<",
                " h<",
                " d<",
                " s ★<",
                " min ★<",
                " h ★<",
                " d ★<"
            ]
            .iter()
            .any(|u| html.contains(u)),
            "no duration in human units: {row}"
        );
    }
    let md = std::fs::read_to_string(cmp.join("report.md")).unwrap();
    let p99 = md
        .lines()
        .find(|l| l.starts_with("| wait_s.p99 |"))
        .unwrap();
    assert!(
        p99.contains(" h") || p99.contains(" min") || p99.contains(" d"),
        "{p99}"
    );
    let Some(browser) = chromium() else {
        // .ci/run installs Chromium and asks for the browser check: there it must run.
        assert!(
            std::env::var_os("FLEETSIM_REQUIRE_CHROMIUM").is_none(),
            "FLEETSIM_REQUIRE_CHROMIUM is set but no chromium was found"
        );
        eprintln!(
            "no chromium: the layout check in a browser was skipped (the structure was checked)"
        );
        return;
    };
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    for (dir, name) in [(&cmp, "compare"), (&sweep, "sweep")] {
        let v = probe(
            &browser,
            &dir.join("report.html"),
            &shots.join(format!("report-{name}.png")),
        );
        assert!(v["boxes"].as_u64().unwrap() >= 1, "{name}: {v}");
        assert_eq!(
            v["outside"], 0,
            "{name}: a table box ends outside the page: {v}"
        );
        assert!(
            v["scrollWidth"].as_u64().unwrap() <= v["innerWidth"].as_u64().unwrap(),
            "{name}: the page is wider than the window: {v}"
        );
    }
}
