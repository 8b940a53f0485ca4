"""A 500-community tree in the static CommunityExplorer, in Chromium: the root is in view without scrolling,
the labels keep a readable size, and the rest is reached by scrolling the tree's box (the page does not grow
by the tree's height)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def big_tree():
    from crux_nb.widgets import CommunityInfo, ExplorerData
    from crux_nb.widgets._explorer_html import static_html

    def info(cid, level, parent, children=()):
        kind = "root" if parent is None else ("parent" if children else "leaf")
        return CommunityInfo(cid, level, kind, parent, tuple(children), 3, 2, f"Community {cid}", "", ())

    parents = [f"p{i:02d}" for i in range(20)]
    leaves = {p: [f"l{j:03d}" for j in range(479) if j % 20 == i] for i, p in enumerate(parents)}
    communities = [info("root", 2, None, parents)]
    for p in parents:
        communities.append(info(p, 1, "root", leaves[p]))
        communities += [info(leaf, 0, p) for leaf in leaves[p]]
    data = ExplorerData(scope="corpus", config_id="big", status="ready", generation_id="g1", view=(None, None),
                        communities=tuple(communities))
    assert len(data.communities) == 500
    return static_html(data, selected=data.find("root"))


def test_500_communities_root_visible_labels_readable(browser, artifacts, tmp_path):
    page_file = tmp_path / "tree.html"
    page_file.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{big_tree()}</body></html>",
                         encoding="utf-8")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(page_file.as_uri())
    box = page.locator(".crux-tree .crux-graph-box").first
    frame = box.bounding_box()
    assert frame is not None and 200 < frame["height"] <= 620  # a scroll box, not an 18,000 px page
    root = page.locator(".crux-community-svg g[data-id='root']")
    at = root.bounding_box()
    assert at is not None and frame["y"] <= at["y"] and at["y"] + at["height"] <= frame["y"] + frame["height"]
    assert frame["x"] <= at["x"] and at["width"] >= 200  # drawn at its natural width, not scaled down
    size = page.evaluate("""() => {
        const text = document.querySelector(".crux-community-svg g[data-id='l478'] text");
        return text.getBoundingClientRect().height; }""")
    assert size >= 11  # 12 px text stays 12 px
    scroll = box.evaluate("element => [element.scrollHeight, element.clientHeight]")
    assert scroll[0] > 10 * scroll[1]  # the rest of the tree is there, one scroll away
    box.evaluate("element => element.scrollTo(0, element.scrollHeight)")
    last = page.locator(".crux-community-svg g.crux-node").last.bounding_box()  # drawn last: the bottom row
    assert last is not None and frame["y"] <= last["y"] <= frame["y"] + frame["height"]
    box.evaluate("element => element.scrollTo(0, 0)")
    page.screenshot(path=str(artifacts / "tree-500.png"))
    page.close()
