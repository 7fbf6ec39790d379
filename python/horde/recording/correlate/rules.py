"""Built-in correlation rules for the frameworks users meet.

Each rule knows a token by the name of the slot that sends it and where the framework puts it
in responses, so the check it writes is the idiomatic one
(``css('input[name="javax.faces.ViewState"]', "value")``), found even where generic matching
would hesitate, and named after what it is. Every rule's extractor is still checked on the
recorded response; one that does not give the recorded value is not used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

from .extractors import Extractor, css_extractor, regex_escape, regex_extractor


@dataclass(frozen=True)
class FieldRule:
    """A token a form (or multipart body, or query) sends under a known field name."""

    framework: str
    fields: Tuple[str, ...]  # lowercase
    variable: str
    # CSS (selector, attribute) where pages carry it; {field} is the field's name as sent.
    html: Tuple[Tuple[str, str], ...] = (('input[name="{field}"]', "value"),)
    # Regexes for partial responses (JSF's XML, ASP.NET's UpdatePanel delta); {field}: escaped.
    text: Tuple[str, ...] = ()

    def extractors(self, field_name: str) -> List[Extractor]:
        quoted = field_name.replace("\\", "\\\\").replace('"', '\\"')
        found = [css_extractor(selector.format(field=quoted), attribute) for selector, attribute in self.html]
        found += [regex_extractor(pattern.format(field=regex_escape(field_name))) for pattern in self.text]
        return found


@dataclass(frozen=True)
class HeaderRule:
    """A token a header sends: from a cookie (the jar) or from a page's meta tag."""

    framework: str
    headers: Tuple[str, ...]  # lowercase
    variable: str
    cookies: Tuple[str, ...] = ()
    meta: Tuple[str, ...] = ()

    def extractors(self) -> List[Extractor]:
        return [css_extractor(f'meta[name="{name}"]', "content") for name in self.meta]


JSF_PARTIAL = r'<update id="[^"]*{field}[^"]*"><!\[CDATA\[([^\]]*)\]\]>'
ASPNET_DELTA = r"\|hiddenField\|{field}\|([^|]*)\|"

FIELD_RULES = (
    FieldRule("JSF", ("javax.faces.viewstate", "jakarta.faces.viewstate"), "view_state", text=(JSF_PARTIAL,)),
    FieldRule("JSF", ("javax.faces.clientwindow", "jakarta.faces.clientwindow"), "client_window", text=(JSF_PARTIAL,)),
    FieldRule("Django", ("csrfmiddlewaretoken",), "csrf_token"),
    FieldRule("ASP.NET", ("__viewstate",), "viewstate", text=(ASPNET_DELTA,)),
    FieldRule("ASP.NET", ("__viewstategenerator",), "viewstate_generator", text=(ASPNET_DELTA,)),
    FieldRule("ASP.NET", ("__eventvalidation",), "event_validation", text=(ASPNET_DELTA,)),
    FieldRule("ASP.NET", ("__previouspage",), "previous_page", text=(ASPNET_DELTA,)),
    FieldRule("ASP.NET", ("__requestverificationtoken",), "request_verification_token"),
    FieldRule("Rails", ("authenticity_token",), "authenticity_token",
              html=(('input[name="{field}"]', "value"), ('meta[name="csrf-token"]', "content"))),
    FieldRule("Spring", ("_csrf",), "csrf", html=(('input[name="{field}"]', "value"), ('meta[name="_csrf"]', "content"))),
    FieldRule("Laravel", ("_token",), "csrf_token",
              html=(('input[name="{field}"]', "value"), ('meta[name="csrf-token"]', "content"))),
)

HEADER_RULES = (
    HeaderRule("Django", ("x-csrftoken",), "csrftoken", cookies=("csrftoken",)),
    HeaderRule("Angular/Spring/Laravel", ("x-xsrf-token",), "xsrf_token", cookies=("XSRF-TOKEN",)),
    HeaderRule("Rails/Laravel", ("x-csrf-token",), "csrf_token", meta=("csrf-token", "_csrf")),
)


def field_rule(name: str) -> Optional[FieldRule]:
    lowered = name.lower()
    return next((rule for rule in FIELD_RULES if lowered in rule.fields), None)


def header_rule(name: str) -> Optional[HeaderRule]:
    lowered = name.lower()
    return next((rule for rule in HEADER_RULES if lowered in rule.headers), None)


# JSON keys a login answers its token under, and the ids a later URL names.
TOKEN_KEYS = ("access_token", "accessToken", "token", "id_token", "jwt", "auth_token", "authToken", "bearer")


def is_id_key(key) -> bool:
    return isinstance(key, str) and (key.lower() == "id" or key.lower().endswith("_id") or key.endswith("Id"))
