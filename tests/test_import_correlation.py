"""Correlation, case by case, on small hand-written recordings: each source kind, each framework
rule, which occurrence a value binds to, values the client made, typed inputs, and the values
that must not be correlated. Each case reads the plan the generated simulation makes: which
check saves what on which response, and which slot sends ``${...}``. The replays against real
servers are in test_import_replay.py."""

import json

import pytest

from recordings import START, entry, har, import_har, load_plan, requests_of

SITE = "http://127.0.0.1:8080"


def imported(tmp_path, entries, *flags):
    path = har(tmp_path / "journey.har", entries)
    completed = import_har(path, "-o", tmp_path / "journey.py", *flags)
    assert completed.returncode == 0, completed.stderr
    plan = load_plan(tmp_path / "journey.py")
    return plan, requests_of(plan), (tmp_path / "journey.py").read_text()


def saves(request):
    """{variable: (source type, its main argument, optional)} of a request's checks."""
    found = {}
    for check in request.get("checks", []):
        if "save_as" in check:
            source = check["source"]
            argument = source.get("selector") or source.get("path") or source.get("pattern") or source.get("name")
            found[check["save_as"]] = (source["type"], argument, check.get("optional", False))
    return found


def form(request):
    return {p["name"]: p["value"] for p in request["body"]["params"]}


def headers(request):
    return {h["name"]: h["value"] for h in request.get("headers", [])}


def steps(plan):
    return plan["scenarios"][0]["steps"]


def page(body, at, url=SITE + "/form", **options):
    return entry("GET", url, at=at, body=body, **options)


def post(url, fields, at, status=200, body="<title>done</title>", **options):
    from urllib.parse import urlencode

    return entry("POST", url, status, at=at, body=body, post=("application/x-www-form-urlencoded", urlencode(fields)),
                 **options)


# Source kinds.

def test_hidden_input_becomes_a_css_check_and_the_field_a_template(tmp_path):
    _, requests, source = imported(tmp_path, [
        page('<form><input type="hidden" name="nonce_field" value="a81f3c9e27d4"></form>', 0),
        post(SITE + "/form", {"nonce_field": "a81f3c9e27d4", "comment": "hello"}, 1),
    ])
    assert saves(requests[0]) == {"nonce_field": ("css", 'input[name="nonce_field"]', False)}
    assert form(requests[1]) == {"nonce_field": "${nonce_field}", "comment": "hello"}
    assert '# generic: from "GET /form" (request 1), HTML input[name="nonce_field"] value' in source


def test_json_field_becomes_a_jsonpath_check(tmp_path):
    _, requests, _ = imported(tmp_path, [
        entry("POST", SITE + "/api/session", at=0, mime="application/json", post=("application/json", "{}"),
              body='{"session": {"key": "k-29f8a7c6b5"}, "ttl": 3600}'),
        entry("GET", SITE + "/api/data?session_key=k-29f8a7c6b5", at=1, mime="application/json", body="{}"),
    ])
    assert saves(requests[0]) == {"session_key": ("jsonpath", "$.session.key", False)}
    assert requests[1]["query"] == [{"name": "session_key", "value": "${session_key}"}]
    assert requests[1]["url"] == "/api/data"


def test_response_header_becomes_a_header_check(tmp_path):
    _, requests, _ = imported(tmp_path, [
        entry("GET", SITE + "/start", at=0, body="<p>ok</p>", response_headers=[("X-Flow-Id", "f7e6d5c4b3a2")]),
        entry("GET", SITE + "/next?flow=f7e6d5c4b3a2", at=1, body="<p>ok</p>"),
    ])
    assert saves(requests[0]) == {"flow": ("header", "X-Flow-Id", False)}


def test_a_cookie_copied_into_a_header_is_read_from_the_jar(tmp_path):
    plan, requests, _ = imported(tmp_path, [
        entry("GET", SITE + "/", at=0, body="<p>hi</p>", response_headers=[("Set-Cookie", "guard=9c8b7a6f5e4d3c2b; Path=/")]),
        entry("POST", SITE + "/api/save", at=1, post=("application/json", '{"a": 1}'), mime="application/json",
              body="{}", request_headers=[("X-Guard", "9c8b7a6f5e4d3c2b"), ("Cookie", "guard=9c8b7a6f5e4d3c2b")]),
    ])
    kinds = [s["type"] for s in steps(plan) if s["type"] != "pause"]
    assert kinds == ["request", "get_cookie", "request"]
    assert {"type": "get_cookie", "name": "guard", "save_as": "guard"} in steps(plan)
    assert headers(requests[1]) == {"X-Guard": "${guard}"}
    assert "Cookie" not in headers(requests[1])  # the jar sends the cookie itself


def test_a_cookie_javascript_set_is_added_to_the_jar(tmp_path):
    plan, _, _ = imported(tmp_path, [
        entry("GET", SITE + "/", at=0, body="<p>hi</p>", response_headers=[("Set-Cookie", "sid=s1; Path=/")]),
        entry("GET", SITE + "/next", at=1, body="<p>hi</p>", request_headers=[("Cookie", "sid=s1; consent=all")]),
    ])
    assert [s for s in steps(plan) if s["type"] == "add_cookie"] == [
        {"type": "add_cookie", "name": "consent", "value": "all"}]


def test_text_holding_the_value_gets_a_regex_with_just_enough_context(tmp_path):
    script = '<script>var config = {"debug": false, "apiKey": "Zk29aQ81mX"};</script><p>Zk29aQ81mX?</p>'
    _, requests, _ = imported(tmp_path, [
        page(script, 0),
        entry("GET", SITE + "/api/data?key=Zk29aQ81mX", at=1, mime="application/json", body="{}"),
    ])
    [(kind, pattern, _)] = saves(requests[0]).values()
    assert kind == "regex"
    assert pattern.endswith('([^"]*)"') and "apiKey" in pattern


def test_the_extractor_must_give_exactly_the_recorded_value(tmp_path):
    # The token appears only HTML-escaped in text, where no extractor gives it back as sent:
    # nothing is correlated rather than something wrong.
    _, requests, _ = imported(tmp_path, [
        page("<p>Your code: 8f&amp;c2d9e1b</p>", 0),
        post(SITE + "/form", {"code": "8f&c2d9e1b"}, 1),
    ])
    assert saves(requests[0]) == {}
    assert form(requests[1]) == {"code": "8f&c2d9e1b"}


def test_an_attribute_with_character_references_is_read_decoded(tmp_path):
    _, requests, _ = imported(tmp_path, [
        page('<form><input type="hidden" name="state_blob" value="x9+/a&amp;b=Q7"></form>', 0),
        post(SITE + "/form", {"state_blob": "x9+/a&b=Q7"}, 1),
    ])
    assert saves(requests[0]) == {"state_blob": ("css", 'input[name="state_blob"]', False)}
    assert form(requests[1]) == {"state_blob": "${state_blob}"}


# Which occurrence.

def test_a_token_reissued_on_every_page_binds_to_the_latest_and_later_checks_refresh_it(tmp_path):
    def token_page(value, at, url):
        return page(f'<form><input type="hidden" name="form_token" value="{value}"></form>', at, url=url)

    _, requests, _ = imported(tmp_path, [
        token_page("tok1aaaa1111", 0, SITE + "/a"),
        post(SITE + "/a", {"form_token": "tok1aaaa1111"}, 1),
        token_page("tok2bbbb2222", 2, SITE + "/b"),
        token_page("tok3cccc3333", 3, SITE + "/c"),
        post(SITE + "/c", {"form_token": "tok3cccc3333"}, 4),
    ])
    assert saves(requests[0]) == {"form_token": ("css", 'input[name="form_token"]', False)}
    assert saves(requests[2]) == {}
    assert saves(requests[3]) == {"form_token": ("css", 'input[name="form_token"]', True)}
    assert form(requests[4]) == {"form_token": "${form_token}"}


def test_the_second_form_of_a_page_is_told_apart(tmp_path):
    body = ('<form id="search"><input type="hidden" name="tk" value="AAAA1111bbbb"></form>'
            '<form id="buy"><input type="hidden" name="tk" value="CCCC2222dddd"></form>')
    _, requests, _ = imported(tmp_path, [page(body, 0), post(SITE + "/buy", {"tk": "CCCC2222dddd"}, 1)])
    assert saves(requests[0]) == {"tk": ("css", 'form#buy input[name="tk"]', False)}


# Values that must not be correlated.

def test_values_that_only_look_alike_are_left_as_recorded(tmp_path):
    text = ('<title>upload</title><p>1</p><p>true</p><p>42</p><p>remember the planer</p>'
            '<a href="/next/page">next</a><p>alder-willow</p><p>hunter2secret</p>')
    _, requests, _ = imported(tmp_path, [
        page(text, 0),
        entry("GET", SITE + "/static/app.js", at=0.1, mime="application/javascript", body='const KEY = "pk_live_51Hx9";',
              resource_type="script"),
        post(SITE + "/upload", {"n": "1", "flag": "true", "count": "42", "note": "remember the planer",
                                "back": "/next/page", "kind": "alder-willow", "password": "hunter2secret",
                                "key": "pk_live_51Hx9"}, 1),
    ])
    assert saves(requests[0]) == {}
    sent = form(requests[1])
    assert sent["password"] == "${password}"  # typed: a feeder column, never correlated
    del sent["password"]
    assert sent == {"n": "1", "flag": "true", "count": "42", "note": "remember the planer", "back": "/next/page",
                    "kind": "alder-willow", "key": "pk_live_51Hx9"}
    assert requests[1]["url"] == "/upload"  # the path word "upload" is no id


def test_a_value_the_client_sent_first_is_not_taken_from_its_echo(tmp_path):
    _, requests, _ = imported(tmp_path, [
        post(SITE + "/search", {"ref": "Campaign2026x"}, 0, body="<p>You came from Campaign2026x</p>"),
        post(SITE + "/next", {"ref": "Campaign2026x"}, 1),
    ])
    assert saves(requests[0]) == {}
    assert form(requests[1]) == {"ref": "Campaign2026x"}


def test_no_correlate_replays_every_value_as_recorded(tmp_path):
    _, requests, _ = imported(tmp_path, [
        page('<input type="hidden" name="csrfmiddlewaretoken" value="dj4ngoT0kenValue">', 0),
        post(SITE + "/form", {"csrfmiddlewaretoken": "dj4ngoT0kenValue"}, 1),
    ], "--no-correlate")
    assert saves(requests[0]) == {}
    assert form(requests[1]) == {"csrfmiddlewaretoken": "dj4ngoT0kenValue"}


# Framework rules.

JSF_PAGE = ('<form id="j_id1" method="post"><input type="hidden" name="javax.faces.ViewState" '
            'id="j_id1:javax.faces.ViewState:0" value="{value}" autocomplete="off" /></form>')


def test_jsf_view_state_from_pages_and_partial_responses(tmp_path):
    partial = ('<?xml version="1.0" encoding="UTF-8"?><partial-response id="j_id1"><changes>'
               '<update id="j_id1:javax.faces.ViewState:0"><![CDATA[-712:-88]]></update></changes></partial-response>')
    _, requests, source = imported(tmp_path, [
        page(JSF_PAGE.format(value="4411:-2929"), 0, url=SITE + "/app/page.xhtml"),
        entry("POST", SITE + "/app/page.xhtml", at=1, mime="text/xml", body=partial,
              post=("application/x-www-form-urlencoded",
                    "javax.faces.partial.ajax=true&javax.faces.ViewState=4411%3A-2929&form%3Aname=a"),
              request_headers=[("Faces-Request", "partial/ajax")]),
        post(SITE + "/app/page.xhtml", {"javax.faces.ViewState": "-712:-88", "form:name": "a"}, 2),
    ])
    assert saves(requests[0]) == {"view_state": ("css", 'input[name="javax.faces.ViewState"]', False)}
    [(kind, pattern, optional)] = saves(requests[1]).values()
    assert kind == "regex" and "CDATA" in pattern and optional
    assert form(requests[1])["javax.faces.ViewState"] == "${view_state}"
    assert form(requests[2]) == {"javax.faces.ViewState": "${view_state}", "form:name": "a"}
    assert "JSF rule" in source


def test_jakarta_view_state_and_jsessionid_in_the_form_action(tmp_path):
    body = JSF_PAGE.format(value="-1:77").replace("javax.", "jakarta.")
    _, requests, _ = imported(tmp_path, [
        page(body, 0, url=SITE + "/app/", response_headers=[("Set-Cookie", "JSESSIONID=AB12CD34EF56; Path=/app")]),
        post(SITE + "/app/login.xhtml;jsessionid=AB12CD34EF56", {"jakarta.faces.ViewState": "-1:77"}, 1),
    ])
    assert saves(requests[0]) == {"view_state": ("css", 'input[name="jakarta.faces.ViewState"]', False)}
    assert requests[1]["url"] == "/app/login.xhtml"
    assert requests[1]["name"] == "POST /app/login.xhtml"


def test_django_form_token_and_ajax_header_from_the_cookie(tmp_path):
    plan, requests, _ = imported(tmp_path, [
        page('<input type="hidden" name="csrfmiddlewaretoken" value="masked0123456789">', 0,
             response_headers=[("Set-Cookie", "csrftoken=secretABCDEF0123; Path=/; SameSite=Lax")]),
        post(SITE + "/form", {"csrfmiddlewaretoken": "masked0123456789"}, 1),
        entry("POST", SITE + "/api/notes/", 201, at=2, mime="application/json", body='{"id": 7}',
              post=("application/json", '{"text": "x"}'), request_headers=[("X-CSRFToken", "secretABCDEF0123")]),
    ])
    assert saves(requests[0]) == {"csrf_token": ("css", 'input[name="csrfmiddlewaretoken"]', False)}
    assert {"type": "get_cookie", "name": "csrftoken", "save_as": "csrftoken"} in steps(plan)
    assert headers(requests[2]) == {"X-CSRFToken": "${csrftoken}"}


def test_aspnet_hidden_fields_and_update_panel_delta(tmp_path):
    body = ('<form id="form1"><input type="hidden" name="__VIEWSTATE" id="__VIEWSTATE" value="/wEPDwUKMTY1NDU2MTA1MmRk" />'
            '<input type="hidden" name="__EVENTVALIDATION" id="__EVENTVALIDATION" value="/wEWAgKM54rGBgKM54rGBw==" /></form>')
    delta = "1|#||4|26|hiddenField|__VIEWSTATE|/wEPDwUKLTk5OTk5OTk5OWRk|24|hiddenField|__EVENTVALIDATION|/wEWAwKN54rGBA==|"
    _, requests, _ = imported(tmp_path, [
        page(body, 0, url=SITE + "/Default.aspx"),
        entry("POST", SITE + "/Default.aspx", at=1, mime="text/plain", body=delta,
              post=("application/x-www-form-urlencoded", "__EVENTTARGET=btn&__VIEWSTATE=%2FwEPDwUKMTY1NDU2MTA1MmRk"
                    "&__EVENTVALIDATION=%2FwEWAgKM54rGBgKM54rGBw%3D%3D"), request_headers=[("X-MicrosoftAjax", "Delta=true")]),
        post(SITE + "/Default.aspx", {"__EVENTTARGET": "save", "__VIEWSTATE": "/wEPDwUKLTk5OTk5OTk5OWRk",
                                      "__EVENTVALIDATION": "/wEWAwKN54rGBA=="}, 2),
    ])
    assert saves(requests[0]) == {"viewstate": ("css", 'input[name="__VIEWSTATE"]', False),
                                  "event_validation": ("css", 'input[name="__EVENTVALIDATION"]', False)}
    delta_checks = saves(requests[1])
    assert delta_checks["viewstate"][0] == "regex" and "hiddenField" in delta_checks["viewstate"][1]
    assert form(requests[2]) == {"__EVENTTARGET": "save", "__VIEWSTATE": "${viewstate}",
                                 "__EVENTVALIDATION": "${event_validation}"}


@pytest.mark.parametrize("framework, field, header, html", [
    ("Rails", "authenticity_token", "X-CSRF-Token", '<meta name="csrf-token" content="{t}">'
                                                    '<input type="hidden" name="authenticity_token" value="{t}">'),
    ("Spring", "_csrf", "X-CSRF-Token", '<meta name="_csrf" content="{t}"><input type="hidden" name="_csrf" value="{t}">'),
    ("Laravel", "_token", "X-CSRF-TOKEN", '<meta name="csrf-token" content="{t}"><input type="hidden" name="_token" value="{t}">'),
])
def test_rails_spring_laravel_tokens_in_forms_and_headers(tmp_path, framework, field, header, html):
    token = "Q2x1ZXMtMTIzNDU2Nzg5MA"
    _, requests, source = imported(tmp_path, [
        page(html.format(t=token), 0),
        post(SITE + "/form", {field: token, "title": "x"}, 1),
        page(html.format(t=token + "b"), 2, url=SITE + "/edit"),
        entry("POST", SITE + "/api/x", at=3, mime="application/json", body="{}", post=("application/json", "{}"),
              request_headers=[(header, token + "b")]),
    ])
    assert form(requests[1])[field].startswith("${")
    assert headers(requests[3])[header].startswith("${")
    [(_, selector, _)] = saves(requests[2]).values()
    assert selector.startswith("meta[")
    assert f"{framework} rule" in source or "Rails/Laravel rule" in source


def test_xsrf_cookie_into_header(tmp_path):
    plan, requests, _ = imported(tmp_path, [
        page("<p>app</p>", 0, response_headers=[("Set-Cookie", "XSRF-TOKEN=ng7f6e5d4c3b2a; Path=/")]),
        entry("POST", SITE + "/api/x", at=1, mime="application/json", body="{}", post=("application/json", "{}"),
              request_headers=[("X-XSRF-TOKEN", "ng7f6e5d4c3b2a")]),
    ])
    assert {"type": "get_cookie", "name": "XSRF-TOKEN", "save_as": "xsrf_token"} in steps(plan)
    assert headers(requests[1]) == {"X-XSRF-TOKEN": "${xsrf_token}"}


def test_bearer_token_from_the_login_response_and_ids_in_paths(tmp_path):
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbm4ifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
    _, requests, source = imported(tmp_path, [
        entry("POST", SITE + "/api/login", at=0, mime="application/json", post=("application/json", '{"user": "ann"}'),
              body=json.dumps({"user": "ann", "access_token": jwt, "expires": 3600})),
        entry("GET", SITE + "/api/orders", at=1, mime="application/json",
              body='{"orders": [{"id": 7, "status": "open"}, {"id": 123452, "status": "shipped"}]}',
              request_headers=[("Authorization", f"Bearer {jwt}")]),
        entry("GET", SITE + "/api/orders/123452", at=2, mime="application/json", body='{"id": 123452}',
              request_headers=[("Authorization", f"Bearer {jwt}")]),
        entry("POST", SITE + "/api/orders/7/cancel", at=3, mime="application/json", body='{"id": 7}',
              request_headers=[("Authorization", f"Bearer {jwt}")]),
    ])
    assert saves(requests[0]) == {"access_token": ("jsonpath", "$.access_token", False)}
    assert all(headers(r)["Authorization"] == "Bearer ${access_token}" for r in requests[1:])
    assert saves(requests[1]) == {"order_id": ("jsonpath", "$.orders[1].id", False),
                                  "order_id_2": ("jsonpath", "$.orders[0].id", False)}
    assert requests[2]["url"] == "/api/orders/${order_id}" and requests[2]["name"] == "GET /api/orders/{order_id}"
    assert requests[3]["url"] == "/api/orders/${order_id_2}/cancel"
    assert "bearer token rule (JWT)" in source and "REST id rule" in source
    # The user name typed into the login is a feeder column.
    assert requests[0]["body"] == {"type": "json", "value": {"user": "${user}"}}


# Values the client made, and what was typed.

def test_client_generated_values_become_template_functions(tmp_path):
    recorded_ms = str(int(START.timestamp() * 1000) + 123)  # the client's clock while recording
    recorded_s = str(int(START.timestamp()) + 2)  # a signed request's timestamp, in seconds
    plan, requests, _ = imported(tmp_path, [
        entry("POST", SITE + "/api/notes?_=" + recorded_ms, at=0, mime="application/json", body="{}",
              post=("application/json",
                    '{"client_id": "1f64f92c-0535-42dc-92a4-e9605da6c040", "text": "x", "ts": "' + recorded_s + '"}')),
        entry("GET", SITE + "/authorize?state=h7Gk2LmQ9zXw4RtY&nonce=n0nc3V4lu3xyz&client=web", at=1, body="<p>ok</p>"),
        entry("GET", SITE + "/api/notes/by-client/1f64f92c-0535-42dc-92a4-e9605da6c040", at=2, mime="application/json",
              body="{}"),
    ])
    assert requests[0]["query"] == [{"name": "_", "value": "${__now_ms()}"}]
    assert {"type": "set", "values": [{"name": "client_id", "value": "${__uuid()}"}]} in steps(plan)
    assert requests[0]["body"]["value"] == {"client_id": "${client_id}", "text": "x", "ts": "${__now_s()}"}
    assert requests[1]["query"] == [{"name": "state", "value": "${state}"}, {"name": "nonce", "value": "${nonce}"},
                                    {"name": "client", "value": "web"}]
    assert {"type": "set", "values": [{"name": "state", "value": "${__random_string(16)}"}]} in steps(plan)
    assert {"type": "set", "values": [{"name": "nonce", "value": "${__random_string(13)}"}]} in steps(plan)
    # The same uuid later is the same variable, not a new one.
    assert requests[2]["url"] == "/api/notes/by-client/${client_id}"


def test_a_pkce_pair_becomes_each_users_own_verifier_and_its_challenge(tmp_path):
    # RFC 7636 appendix B's pair, as a single-page app sends it.
    verifier, challenge = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    plan, requests, source = imported(tmp_path, [
        entry("GET", SITE + f"/authorize?client_id=web&code_challenge={challenge}&code_challenge_method=S256", at=0,
              body="<p>signed in</p>"),
        post(SITE + "/token", {"grant_type": "authorization_code", "code_verifier": verifier}, 1),
    ])
    assert {"type": "set", "values": [{"name": "code_verifier", "value": "${__random_string(43)}"}]} in steps(plan)
    assert {"name": "code_challenge", "value": "${code_verifier.pkce_challenge()}"} in requests[0]["query"]
    assert form(requests[1])["code_verifier"] == "${code_verifier}"


def test_typed_inputs_become_a_feeder_written_beside_the_simulation(tmp_path):
    plan, requests, source = imported(tmp_path, [
        page("<form><input name=username><input name=password type=password></form>", 0, url=SITE + "/login"),
        post(SITE + "/login", {"username": "ann", "password": "s3cret-pass", "remember": "on"}, 1),
        entry("GET", SITE + "/search?q=oak+plank", at=2, body="<p>results</p>"),
    ])
    assert steps(plan)[0] == {"type": "feed", "feeder": "journey_inputs"}
    assert plan["feeders"][0]["strategy"] == "circular"
    assert form(requests[1]) == {"username": "${username}", "password": "${password}", "remember": "on"}
    assert requests[2]["query"] == [{"name": "q", "value": "${q}"}]
    assert (tmp_path / "journey_inputs.csv").read_text().splitlines() == ["username,password,q", "ann,s3cret-pass,oak plank"]


def test_escaped_values_are_matched_decoded(tmp_path):
    # JSON's \/ and \u escapes, HTML's character references: the slot sends the decoded value.
    _, requests, _ = imported(tmp_path, [
        entry("GET", SITE + "/api/start", at=0, mime="application/json",
              body='{"next": {"ticket": "tk\\/91\\u003dAb7x"}}'),
        page('<input type="hidden" name="sig_value" value="s&#x2F;9&#61;Qw81">', 1),
        post(SITE + "/go", {"ticket": "tk/91=Ab7x", "sig_value": "s/9=Qw81"}, 2),
    ])
    assert saves(requests[0]) == {"ticket": ("jsonpath", "$.next.ticket", False)}
    assert saves(requests[1]) == {"sig_value": ("css", 'input[name="sig_value"]', False)}
    assert form(requests[2]) == {"ticket": "${ticket}", "sig_value": "${sig_value}"}


def test_a_number_in_a_json_body_stays_a_number(tmp_path):
    _, requests, _ = imported(tmp_path, [
        entry("POST", SITE + "/api/notes", 201, at=0, mime="application/json", post=("application/json", '{"text": "a"}'),
              body='{"id": 123456, "text": "a"}'),
        entry("POST", SITE + "/api/pins", 201, at=1, mime="application/json", body="{}",
              post=("application/json", '{"note_id": 123456, "pinned": true, "label": "top ${x}"}')),
    ])
    assert saves(requests[0]) == {"note_id": ("jsonpath", "$.id", False)}
    assert requests[1]["body"] == {"type": "raw", "text": '{"note_id": ${note_id}, "pinned": true, "label": "top $${x}"}'}
    assert headers(requests[1]) == {"Content-Type": "application/json"}


# A value a redirect carries.

def test_a_code_in_a_redirects_location_sent_again_later_is_read_from_the_location(tmp_path):
    # An OAuth-style login: the 302 carries a code to the callback page, whose script then
    # posts the same code. The engine would follow the redirect unseen: the import cuts the
    # chain there, and the login's check reads the Location.
    code = "Sp1xQ9rT4vW8yZ2b"
    plan, requests, source = imported(tmp_path, [
        post(SITE + "/login", {"user": "ann"}, 0, status=302, body="",
             response_headers=[("Location", f"{SITE}/callback?code={code}&state=xyz")]),
        entry("GET", f"{SITE}/callback?code={code}&state=xyz", at=0.1, body="<title>callback</title>"),
        post(SITE + "/api/token", {"code": code, "client": "web"}, 0.3, body='{"ok": true}'),
    ])
    login, callback, token = requests
    assert login["follow_redirects"] is False
    assert saves(login) == {"code": ("header_regex", "[?&]code=([^&#]*)", False)}
    assert {"source": {"type": "status"}, "validate": {"type": "is", "value": "302"}} in login["checks"]
    assert callback["url"].endswith("/callback") or "${code}" in json.dumps(callback)
    assert "${code}" in json.dumps(callback) and form(token)["code"] == "${code}"
    assert "disable_follow_redirect()" in source


def test_a_code_in_the_middle_of_a_redirect_chain_is_read_from_that_hops_location(tmp_path):
    # A single sign-on: the login redirects to the identity provider, whose authorization
    # redirects to the callback with a code the callback page's script posts again. The
    # engine follows a whole chain or none: every hop up to the code's becomes a request of its
    # own, unfollowed, and the code is read from the Location of the hop that carried it.
    code = "Mz7kQ2pW9xR4tY6u"
    plan, requests, source = imported(tmp_path, [
        post(SITE + "/login", {"user": "ann"}, 0, status=302, body="",
             response_headers=[("Location", f"{SITE}/sso/authorize?client=web")]),
        entry("GET", f"{SITE}/sso/authorize?client=web", 302, at=0.1, body="",
              response_headers=[("Location", f"{SITE}/callback?code={code}")]),
        entry("GET", f"{SITE}/callback?code={code}", at=0.2, body="<title>callback</title>"),
        post(SITE + "/api/token", {"code": code, "client": "web"}, 0.4, body='{"ok": true}'),
    ])
    login, authorize, callback, token = requests
    assert login["follow_redirects"] is False and authorize["follow_redirects"] is False
    assert authorize["url"].endswith("/sso/authorize?client=web")
    assert saves(authorize) == {"code": ("header_regex", "[?&]code=([^&#]*)", False)}
    assert saves(login) == {}
    assert "${code}" in json.dumps(callback) and form(token)["code"] == "${code}"
    assert "follow_redirects" not in callback
    assert source.count("disable_follow_redirect()") == 2


def test_a_redirect_whose_values_are_not_sent_again_is_followed_by_the_engine(tmp_path):
    _, requests, _ = imported(tmp_path, [
        post(SITE + "/login", {"user": "ann"}, 0, status=302, body="",
             response_headers=[("Location", f"{SITE}/home?welcome=Sp1xQ9rT4vW8yZ2b")]),
        entry("GET", f"{SITE}/home?welcome=Sp1xQ9rT4vW8yZ2b", at=0.1, body="<title>home</title>"),
        page("<title>other</title>", 0.5, url=SITE + "/other"),
    ])
    assert len(requests) == 2 and "follow_redirects" not in requests[0]
