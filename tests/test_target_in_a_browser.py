"""The built-in target clicked through in a real browser (Debian's chromium, driven by
Playwright), as users do when they practise recording on it: every form holds its own
ViewState, as JSF renders it, so the browser's submits carry it. The target's own counts say
that no ViewState was stale and that the login and the upload happened."""


def test_a_browser_logs_in_navigates_submits_and_uploads_with_no_stale_view_state(browser, target, tmp_path):
    upload = tmp_path / "plank.txt"
    upload.write_text("oak, 2 m, planed on both faces\n")
    page = browser.new_page()
    try:
        page.goto(target.url + "/")
        page.fill("#newsletter input[name=email]", "sawyer@mill.test")
        page.click("#newsletter button")
        assert page.inner_text("#message") == "Subscribed sawyer@mill.test"
        page.fill("#search input[name=q]", "oak")
        page.click("#search button")
        assert page.inner_text("#results") == "oak plank"
        page.click("text=Home")
        page.click("#login")
        page.fill("#loginForm input[name=username]", "sawyer")
        page.fill("#loginForm input[name=password]", "ash-frame")
        page.click("#loginForm button")
        assert page.url == target.url + "/account"
        assert page.inner_text("#user") == "sawyer"
        page.fill("#commentForm input[name=comment]", "first cut")
        page.click("#commentForm button")
        assert page.inner_text("#message") == "Saved: first cut"
        page.set_input_files("#uploadForm input[type=file]", str(upload))
        page.click("#uploadForm button")
        assert page.inner_text("#message") == f"Received plank.txt ({upload.stat().st_size} bytes)"
        # A search from the account page: the header's form, with its own ViewState.
        page.fill("#search input[name=q]", "frame")
        page.click("#search button")
        assert page.inner_text("#results") == "ash frame"
    finally:
        page.close()
    stats = target.stats()
    assert stats["view_state_rejections"] == 0, stats
    assert (stats["logins"], stats["uploads"], stats["upload_bytes"]) == (1, 1, upload.stat().st_size), stats
    assert stats["by_route"]["POST /search"] == 2 and stats["by_route"]["POST /newsletter"] == 1, stats
