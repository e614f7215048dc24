"""The service as users run it: ``gaplanner serve`` (uvicorn) on 127.0.0.1, killed and restarted,
and its plan viewer in headless Chromium."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from service.testing import (
    FINISHED,
    Server,
    buffers_document,
    check_plan,
    run_server,
    unreachable_bound_document,
    wait_until,
)

ENV = {
    "GAPLANNER_WORKERS": "2",
    "GAPLANNER_DEFAULT_TIME_LIMIT": "0.5",
    "GAPLANNER_MAX_TIME_LIMIT": "30",
    "GAPLANNER_API_KEY": "",
}


pytestmark = pytest.mark.slow  # real server processes (and a browser)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("live")
    with run_server(folder / "jobs.sqlite3", env=ENV) as live:
        yield live


def finish(server: Server, location: str, timeout: float = 60.0) -> dict[str, Any]:
    def finished() -> dict[str, Any] | None:
        status, job = server.request("GET", location)
        assert status == 200, job
        return job if job["status"] in FINISHED else None

    return wait_until(finished, timeout, 0.1)


def test_submit_poll_result_over_real_http(server: Server) -> None:
    doc = buffers_document(60, seed=7)
    status, accepted = server.request("POST", "/v1/plans", {"graph": doc, "options": {"generations": 10}})
    assert status == 202
    job = finish(server, accepted["links"]["self"])
    assert job["status"] == "done"
    check_plan(doc, job["plan"])
    status, health = server.request("GET", "/v1/health")
    assert status == 200 and health["workers"] == 2


def test_twenty_concurrent_clients(server: Server) -> None:
    docs = [unreachable_bound_document(40, seed=i) for i in range(20)]

    def client(doc: dict[str, Any]) -> dict[str, Any]:
        options = {"time_limit": 0.3, "stall_generations": None}
        status, accepted = server.request("POST", "/v1/plans", {"graph": doc, "options": options})
        assert status == 202, accepted
        return finish(server, accepted["links"]["self"])

    with ThreadPoolExecutor(20) as pool:
        jobs = list(pool.map(client, docs))
    for doc, job in zip(docs, jobs, strict=True):
        assert job["status"] == "done"
        check_plan(doc, job["plan"])


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def test_killed_server_restarts_with_nothing_lost(tmp_path: Path) -> None:
    db = tmp_path / "jobs.sqlite3"
    env = {**ENV, "GAPLANNER_WORKERS": "1"}
    long_doc = unreachable_bound_document(seed=11)
    with run_server(db, env=env) as first:
        _, finished = first.request("POST", "/v1/plans", {"graph": "example:seed000_queue"})
        done_before = finish(first, finished["links"]["self"])
        assert done_before["status"] == "done"
        options = {"time_limit": 4, "stall_generations": None}
        _, running = first.request("POST", "/v1/plans", {"graph": long_doc, "options": options})
        _, queued = first.request("POST", "/v1/plans", {"graph": buffers_document(30), "options": options})

        def searching() -> bool:
            job = first.request("GET", running["links"]["self"])[1]
            return job["status"] == "running" and bool(job["progress"]["generation"])

        wait_until(searching, 60)
        assert first.request("GET", queued["links"]["self"])[1]["status"] == "queued"
        workers = first.children()
        first.kill()  # SIGKILL: no shutdown hook runs
        # The orphaned worker notices its parent is gone and stops within a generation.
        wait_until(lambda: not any(_alive(pid) for pid in workers), 15)

    with run_server(db, env=env) as second:
        status, job = second.request("GET", finished["links"]["self"])
        assert status == 200 and job["status"] == "done" and job["plan"] == done_before["plan"]
        again = finish(second, running["links"]["self"])
        assert again["status"] == "done" and again["attempts"] == 1, again
        assert again["plan"]["stop_reason"] == "time limit"
        check_plan(long_doc, again["plan"])
        later = finish(second, queued["links"]["self"])
        assert later["status"] == "done" and later["attempts"] == 0
        check_plan(buffers_document(30), later["plan"])


# --- the viewer in a real browser -------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("chromium and chromedriver are not installed (apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER)
    driver = webdriver.Chrome(options=options, service=service)
    try:
        yield driver
    finally:
        driver.quit()


def test_viewer_draws_every_block_in_chromium(server: Server, browser: Any, tmp_path: Path) -> None:
    from PIL import Image
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    doc = unreachable_bound_document(80, seed=3)
    options = {"time_limit": 1.0, "stall_generations": None}
    _, accepted = server.request("POST", "/v1/plans", {"graph": doc, "options": options})
    job = finish(server, accepted["links"]["self"])
    browser.get(server.url + job["links"]["view"])
    wait_until(lambda: browser.execute_script("return document.body.dataset.ready === '1'"), 10)

    rects = browser.find_elements(By.CSS_SELECTOR, "#blocks rect.block")
    assert len(rects) == len(doc["buffers"])
    assert {r.get_attribute("data-id") for r in rects} == {b["id"] for b in doc["buffers"]}
    assert browser.find_elements(By.CSS_SELECTOR, "#plan-svg line.peak")
    assert browser.find_elements(By.CSS_SELECTOR, "#plan-svg line.bound")
    assert browser.find_element(By.ID, "best-curve").get_attribute("d").count("L") >= 2
    # Nothing was fetched: the page and its data are one document.
    fetched = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert fetched == [], fetched
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors

    biggest = max(rects, key=lambda r: r.size["width"] * r.size["height"])
    ActionChains(browser).move_to_element(biggest).perform()
    tooltip = browser.find_element(By.ID, "tooltip")
    wait_until(lambda: tooltip.is_displayed(), 5)
    assert tooltip.text.startswith(biggest.get_attribute("data-id") + ":")

    shot = tmp_path / "viewer.png"
    browser.save_screenshot(str(shot))
    if os.environ.get("GAPLANNER_SCREENSHOT"):
        shutil.copy(shot, os.environ["GAPLANNER_SCREENSHOT"])
    image = Image.open(shot).convert("RGB")
    small = image.resize((image.width // 4, image.height // 4))
    colours = small.getcolors(maxcolors=1 << 16) or []
    not_white = sum(count for count, rgb in colours if min(rgb) < 235)
    assert len(colours) > 50, "the screenshot is (nearly) one colour"
    assert not_white / (small.width * small.height) > 0.1


def test_viewer_of_a_baseline_plan_says_there_is_no_trace(server: Server, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    _, accepted = server.request(
        "POST", "/v1/plans", {"graph": "zoo:googlenet", "options": {"algorithm": "greedy-size"}}
    )
    job = finish(server, accepted["links"]["self"])
    started = time.monotonic()
    browser.get(server.url + job["links"]["view"])
    wait_until(lambda: browser.execute_script("return document.body.dataset.ready === '1'"), 10)
    assert time.monotonic() - started < 10
    assert len(browser.find_elements(By.CSS_SELECTOR, "#blocks rect.block")) == job["input"]["blocks"]
    assert "one-pass baseline" in browser.find_element(By.ID, "trace-chart").text


# --- the page at / in a real browser ----------------------------------------------------------------


def _not_blank(path: Path) -> None:
    from PIL import Image, ImageStat

    image = Image.open(path).convert("L")
    assert ImageStat.Stat(image).var[0] > 100, "the screenshot is (nearly) one colour"


def _screenshot(browser: Any, path: Path) -> None:
    browser.save_screenshot(str(path))
    if folder := os.environ.get("GAPLANNER_SCREENSHOT_DIR"):
        shutil.copy(path, Path(folder) / path.name)
    _not_blank(path)


def _blob_text(browser: Any, element_id: str) -> str:
    script = """const done = arguments[arguments.length - 1];
        fetch(document.getElementById(arguments[0]).href).then((r) => r.text()).then(done);"""
    return browser.execute_async_script(script, element_id)


def test_the_page_uploads_searches_and_shows_the_plan(server: Server, browser: Any, tmp_path: Path) -> None:
    import json

    import numpy as np
    from selenium.webdriver.common.by import By

    from gaplanner.plans.verify import verify
    from gaplanner.problem.loading import load_problem

    doc = unreachable_bound_document(120, seed=5)  # the search runs its whole time limit
    path = tmp_path / "unreachable.json"
    path.write_text(json.dumps(doc))
    browser.get(server.url + "/")
    wait_until(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#bundled option")) > 5, 10)
    browser.find_element(By.ID, "file").send_keys(str(path))
    summary = browser.find_element(By.ID, "input-summary")
    wait_until(lambda: "120 blocks" in summary.text, 30)
    limit = browser.find_element(By.ID, "time-limit")
    limit.clear()
    limit.send_keys("3")
    browser.find_element(By.ID, "start").click()

    # Live: the best peak against time appears while the job runs, above the lower bound.
    chart = browser.find_element(By.ID, "live-chart")
    wait_until(lambda: int(chart.get_attribute("data-points") or 0) >= 3, 30)
    assert "running" in browser.find_element(By.ID, "live-facts").text
    assert browser.find_elements(By.CSS_SELECTOR, "#live-svg line.bound")
    assert browser.find_element(By.ID, "live-curve").get_attribute("d").count("V") >= 2

    wait_until(lambda: browser.execute_script("return document.body.dataset.done === '1'"), 60)
    frame = browser.find_element(By.ID, "viewer")
    browser.switch_to.frame(frame)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#blocks rect.block")) == len(doc["buffers"])
    browser.switch_to.default_content()
    assert frame.size["height"] > 400

    plan = json.loads(_blob_text(browser, "download-json"))
    check_plan(doc, plan)
    rows = _blob_text(browser, "download-csv").splitlines()
    assert rows[0] == "id,size,offset"
    offsets = {line.split(",")[0]: int(line.split(",")[2]) for line in rows[1:]}
    problem = load_problem(doc)
    verify(problem, np.array([offsets[i] for i in problem.ids], np.int64), plan["peak"])

    table = browser.find_element(By.ID, "compare-table")
    wait_until(lambda: len(table.find_elements(By.CSS_SELECTOR, "tr")) == 5, 60)  # header + 4 planners
    assert "ga" in table.text and "first-fit" in table.text
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    fetched = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert all(name.startswith(server.url) or name.startswith("blob:") for name in fetched), fetched

    _screenshot(browser, tmp_path / "page-desktop.png")
    browser.set_window_size(390, 844)
    wait_until(lambda: browser.execute_script("return window.innerWidth") <= 390, 5)
    svg = "return document.getElementById('live-svg').viewBox.baseVal.width"
    wait_until(lambda: browser.execute_script(svg) < 400, 5)  # redrawn at the phone's width
    overflow = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow} px wider than a phone's screen"
    _screenshot(browser, tmp_path / "page-phone.png")
    browser.execute_script("document.getElementById('live-card').scrollIntoView()")
    _screenshot(browser, tmp_path / "page-phone-result.png")


def test_the_page_says_what_is_wrong_with_a_bad_file(server: Server, browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    path = tmp_path / "broken.csv"
    path.write_text("id,lower,upper,size\na,0,2,big\n")
    browser.get(server.url + "/")
    browser.find_element(By.ID, "file").send_keys(str(path))
    error = browser.find_element(By.ID, "error")
    wait_until(lambda: "line 2, column size" in error.text, 30)
    assert "\n" not in error.text
    assert not browser.find_element(By.ID, "start").is_enabled()


@pytest.mark.parametrize("example", ["sram_dram", "npu_dsp"])
def test_the_page_plans_a_bundled_example_across_memories(server: Server, browser: Any, example: str) -> None:
    import json

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from gaplanner.plans.verify import find_memory_violation
    from gaplanner.problem.loading import load_problem

    browser.get(server.url + "/")
    wait_until(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#bundled option")) > 5, 10)
    Select(browser.find_element(By.ID, "bundled")).select_by_value(f"example:{example}")
    limit = browser.find_element(By.ID, "time-limit")
    limit.clear()
    limit.send_keys("1")
    browser.find_element(By.ID, "start").click()
    wait_until(lambda: browser.execute_script("return document.body.dataset.done === '1'"), 60)

    facts = browser.find_element(By.ID, "result-facts").text
    assert "access cost" in facts and "sram" in facts and "dram" in facts
    plan = json.loads(_blob_text(browser, "download-json"))
    rows = [line.split(",") for line in _blob_text(browser, "download-csv").splitlines()]
    assert rows[0][:4] == ["id", "size", "memory", "offset"]
    placed = {row[0]: (row[2], int(row[3])) for row in rows[1:]}
    assert ("devices" in rows[0]) == (example == "npu_dsp")  # the units using each tensor
    problem = load_problem(f"example:{example}")
    names = [m["id"] for m in plan["memories"]]
    memory_of = [names.index(placed[i][0]) for i in problem.ids]
    offsets = [placed[i][1] for i in problem.ids]
    assert find_memory_violation(problem, memory_of, offsets) is None
    compare = browser.find_element(By.ID, "compare-status")  # the baselines plan one arena only
    wait_until(lambda: "a comparison plans one arena" in compare.text, 60)
    errors = [
        e for e in browser.get_log("browser") if e["level"] == "SEVERE" and "/v1/compare" not in e["message"]
    ]
    assert not errors, errors
