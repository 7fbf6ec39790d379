"""HTTP requests and the HTTP protocol, with Gatling's names in snake_case.

    >>> from horde import http, status
    >>> req = http("home").get("/").header("Accept", "text/html").check(status().is_(200))
    >>> req.to_step()["url"]
    '/'
    >>> http.base_url("http://127.0.0.1:8080").to_plan()["base_url"]
    'http://127.0.0.1:8080'
"""

import json
from dataclasses import dataclass, replace
from typing import Optional

from ._durations import to_ms
from ._protocol import Protocol, Step
from .checks import Check
from .errors import DslError


@dataclass(frozen=True)
class StringBodyPart:
    """A multipart part holding text (templates allowed)."""

    name: str
    value: str

    def to_plan(self):
        return {"type": "string", "name": self.name, "value": self.value}


@dataclass(frozen=True)
class RawFileBodyPart:
    """A multipart part holding a file, sent as it is. A relative path is resolved next to the
    simulation file; a missing file is an error before the run starts. A path with ``${...}``
    (``"uploads/${document}"``, from a feeder) names each user's own file, read when a request
    first sends it and kept by the worker; one that cannot be read is a KO ``unreadable_file``,
    never sent. ``file_name`` is a template too."""

    name: str
    path: str
    file_name: Optional[str] = None
    content_type: Optional[str] = None

    def to_plan(self):
        plan = {"type": "raw_file", "name": self.name, "path": self.path}
        if self.file_name is not None:
            plan["file_name"] = self.file_name
        if self.content_type is not None:
            plan["content_type"] = self.content_type
        return plan


def string_body_part(name, value):
    """Gatling's ``StringBodyPart(name, value)``."""
    return StringBodyPart(_name(name, "string_body_part"), str(value))


def raw_file_body_part(name, path, *, file_name=None, content_type=None):
    """Gatling's ``RawFileBodyPart(name, path)``."""
    return RawFileBodyPart(_name(name, "raw_file_body_part"), str(path), file_name, content_type)


def string_body(text):
    """A raw body, sent as it is after templating."""
    return {"type": "raw", "text": str(text)}


def json_body(value):
    """A JSON body; Content-Type application/json unless a header says otherwise. Strings in it
    may hold ``${name}`` templates."""
    json.dumps(value)  # refuse what JSON cannot hold now, not at run time
    return {"type": "json", "value": value}


def document_from_schema(path):
    """A new JSON document for every request, generated from a schema file by Iron Cushion's
    rules: a JSON document as template (any CouchDB document; ``_id`` and ``_rev`` are
    dropped), or the XML schema format when the file ends in ``.xml``. A relative path is
    resolved next to the simulation.

        >>> document_from_schema("doc.json")
        {'type': 'document_from_schema', 'path': 'doc.json'}
    """
    return {"type": "document_from_schema", "path": str(path)}


def bulk_documents_from_schema(path, count):
    """``{"docs": [...]}`` with ``count`` new documents from the schema for every request: a
    CouchDB ``_bulk_docs`` body.

        >>> bulk_documents_from_schema("doc.json", 100)["count"]
        100
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise DslError(f"bulk_documents_from_schema(): expected a positive number of documents, got {count!r}")
    return {"type": "bulk_documents_from_schema", "path": str(path), "count": count}


def _name(value, what):
    if not isinstance(value, str) or not value:
        raise DslError(f"{what}() needs a non-empty name, got {value!r}")
    return value


@dataclass(frozen=True)
class HttpRequest(Step):
    """An immutable HTTP request builder; every method returns a new request."""

    hint = "a request (http(...))"

    name: str
    method: str
    url: str
    header_pairs: tuple = ()
    query_pairs: tuple = ()
    form_pairs: tuple = ()
    parts: tuple = ()
    raw_body: Optional[dict] = None
    checks: tuple = ()
    resource_requests: tuple = ()
    follow_redirects: Optional[bool] = None

    def disable_follow_redirect(self):
        """Gatling's per-request ``disableFollowRedirect``: a redirect is this request's response,
        which its checks read (add ``status().is_(302)``: a 3xx fails the implicit 2xx check, and
        ``header_regex("Location", ...)`` takes a value out of where it points).

        >>> http("authorize").get("/authorize").disable_follow_redirect().to_step()["follow_redirects"]
        False
        """
        return replace(self, follow_redirects=False)

    def header(self, name, value):
        return replace(self, header_pairs=self.header_pairs + ((_name(name, "header"), str(value)),))

    def headers(self, mapping):
        """Several headers from a dict, as Gatling's ``.headers(Map(...))``."""
        request = self
        for name, value in dict(mapping).items():
            request = request.header(name, value)
        return request

    def query_param(self, name, value):
        return replace(self, query_pairs=self.query_pairs + ((str(name), str(value)),))

    def form_param(self, name, value):
        """An application/x-www-form-urlencoded field."""
        return replace(self, form_pairs=self.form_pairs + ((str(name), str(value)),))

    def body(self, body):
        """A raw text body, or one made by :func:`string_body`, :func:`json_body` or
        :func:`document_from_schema`."""
        if isinstance(body, str):
            body = string_body(body)
        if not isinstance(body, dict) or body.get("type") not in (
            "raw", "json", "document_from_schema", "bulk_documents_from_schema"
        ):
            raise DslError(f"body() takes text, string_body(), json_body() or document_from_schema(), got {body!r}")
        return replace(self, raw_body=body)

    def body_part(self, part):
        """A multipart part: :func:`string_body_part` or :func:`raw_file_body_part`."""
        if not isinstance(part, (StringBodyPart, RawFileBodyPart)):
            raise DslError(f"body_part() takes string_body_part() or raw_file_body_part(), got {part!r}")
        return replace(self, parts=self.parts + (part,))

    def check(self, *checks):
        for check in checks:
            if not isinstance(check, Check):
                raise DslError(f"check() takes checks such as status().is_(200), got {check!r}")
        return replace(self, checks=self.checks + tuple(checks))

    def resources(self, *requests):
        """Requests fetched after this page, concurrently, as a browser fetches a page's
        scripts, styles and images (Gatling's ``.resources``): streams on one HTTP/2
        connection, or up to 6 HTTP/1.1 connections per host. The page's row times the page
        alone; put it in a ``group`` to time the page with its resources.

        >>> page = http("home").get("/").resources(http("css").get("/site.css"), http("logo").get("/logo.png"))
        >>> [r["name"] for r in page.to_step()["resources"]]
        ['css', 'logo']
        """
        for request in requests:
            if not isinstance(request, HttpRequest):
                raise DslError(f"resources() takes requests (http(...).get(...)), got {request!r}")
            if request.resource_requests:
                raise DslError(f"resources(): resource {request.name!r} has resources of its own")
        return replace(self, resource_requests=self.resource_requests + tuple(requests))

    def to_step(self):
        kinds = [k for k, present in (("form", self.form_pairs), ("multipart", self.parts), ("body", self.raw_body)) if present]
        if len(kinds) > 1:
            raise DslError(f"request {self.name!r} has both {kinds[0]} and {kinds[1]}: pick one kind of body")
        step = {"type": "request", "name": self.name, "method": self.method, "url": self.url}
        if self.header_pairs:
            step["headers"] = [{"name": n, "value": v} for n, v in self.header_pairs]
        if self.query_pairs:
            step["query"] = [{"name": n, "value": v} for n, v in self.query_pairs]
        if self.form_pairs:
            step["body"] = {"type": "form", "params": [{"name": n, "value": v} for n, v in self.form_pairs]}
        elif self.parts:
            step["body"] = {"type": "multipart", "parts": [p.to_plan() for p in self.parts]}
        elif self.raw_body is not None:
            step["body"] = dict(self.raw_body)
        if self.checks:
            step["checks"] = [c.to_plan() for c in self.checks]
        if self.resource_requests:
            step["resources"] = [r.to_request() for r in self.resource_requests]
        if self.follow_redirects is not None:
            step["follow_redirects"] = self.follow_redirects
        return step

    def to_request(self):
        """The plan's request alone, as resources and batches hold it (no step type)."""
        request = self.to_step()
        del request["type"]
        return request


class _RequestName:
    """What ``http(name)`` returns: pick the method."""

    def __init__(self, name):
        self._name = _name(name, "http")

    def _request(self, method, url, where=None):
        if not isinstance(url, str) or not url:
            raise DslError(f"http({self._name!r}).{where or method.lower()}() needs a URL, got {url!r}")
        return HttpRequest(self._name, method, url)

    def request(self, method, url):
        """Any method: ``http("purge").request("PURGE", "/cache/item")``, as Gatling's
        ``httpRequest(method, url)`` and k6's ``http.request(method, url)``. A method is a
        token (RFC 9110: letters, digits and ``!#$%&'*+-.^_`|~``) and is case-sensitive."""
        if not isinstance(method, str) or not method:
            raise DslError(f"http({self._name!r}).request() needs a method such as 'PURGE', got {method!r}")
        return self._request(method, url, "request")

    def get(self, url):
        return self._request("GET", url)

    def post(self, url):
        return self._request("POST", url)

    def put(self, url):
        return self._request("PUT", url)

    def patch(self, url):
        return self._request("PATCH", url)

    def delete(self, url):
        return self._request("DELETE", url)

    def head(self, url):
        return self._request("HEAD", url)

    def options(self, url):
        return self._request("OPTIONS", url)


@dataclass(frozen=True)
class HttpProtocol(Protocol):
    """Defaults for every request: base URL, headers, timeouts, redirects, TLS, host names."""

    hint = "http.base_url(...)"

    base: Optional[str] = None
    header_pairs: tuple = ()
    connect_timeout_ms: Optional[int] = None
    request_timeout_ms: Optional[int] = None
    follow_redirects: bool = True
    redirects: Optional[int] = None
    body_limit: Optional[int] = None
    tls: tuple = ()
    host_mappings: tuple = ()
    http2: str = "off"
    accept_encoding: Optional[str] = None
    infer_resources: bool = False
    connections_per_host: Optional[int] = None
    secret_header_names: tuple = ()

    def base_url(self, url):
        return replace(self, base=str(url))

    def header(self, name, value):
        return replace(self, header_pairs=self.header_pairs + ((_name(name, "header"), str(value)),))

    def headers(self, mapping):
        protocol = self
        for name, value in dict(mapping).items():
            protocol = protocol.header(name, value)
        return protocol

    def secret_headers(self, *names):
        """Headers whose values the results never show (summary.json, report.html), wherever
        they are set; Authorization, Proxy-Authorization and Cookie never are, unasked.

        >>> http.header("X-Api-Key", "k3y").secret_headers("X-Api-Key").to_plan()["secret_headers"]
        ['X-Api-Key']
        """
        return replace(self, secret_header_names=self.secret_header_names + tuple(_name(n, "secret_headers") for n in names))

    def request_timeout(self, seconds):
        """From sending a request to the end of its response (default 60 s)."""
        return replace(self, request_timeout_ms=to_ms(seconds, "request_timeout"))

    def connect_timeout(self, seconds):
        return replace(self, connect_timeout_ms=to_ms(seconds, "connect_timeout"))

    def disable_follow_redirect(self):
        return replace(self, follow_redirects=False)

    def max_redirects(self, count):
        return replace(self, redirects=int(count))

    def max_body_bytes(self, size):
        """The largest response body a check may read (default 16 MiB); a larger one is a KO
        ``body_too_large``. Bodies no check reads are never kept, whatever their size.

        >>> http.base_url("http://127.0.0.1:8080").max_body_bytes(64 * 1024 * 1024).to_plan()["max_body_bytes"]
        67108864
        """
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise DslError(f"max_body_bytes() takes a number of bytes of at least 1, got {size!r}")
        return replace(self, body_limit=size)

    def _tls(self, **options):
        return replace(self, tls=self.tls + tuple(options.items()))

    def disable_tls_verification(self):
        """Accept any server certificate (the summary says verification was off).

        >>> http.base_url("https://127.0.0.1:8443").disable_tls_verification().to_plan()["tls"]
        {'verify': False}
        """
        return self._tls(verify=False)

    def ca_file(self, path):
        """Trust the certificate authorities of this PEM file besides the system's."""
        return self._tls(ca_file=str(path))

    def client_certificate(self, certificate, key):
        """A client certificate (PEM chain) and its private key (PEM) for mutual TLS.

        >>> http.client_certificate("client.pem", "client.key").to_plan()["tls"]
        {'client_certificate': {'certificate': 'client.pem', 'key': 'client.key'}}
        """
        return self._tls(client_certificate={"certificate": str(certificate), "key": str(key)})

    def tls_versions(self, minimum=None, maximum=None):
        """The TLS versions offered: "1.2" and/or "1.3" (both by default)."""
        for version in (minimum, maximum):
            if version is not None and version not in ("1.2", "1.3"):
                raise DslError(f'tls_versions() takes "1.2" or "1.3", got {version!r}')
        options = {}
        if minimum is not None:
            options["min_version"] = minimum
        if maximum is not None:
            options["max_version"] = maximum
        return self._tls(**options)

    def disable_sni(self):
        """Do not send the host name in the TLS handshake."""
        return self._tls(sni=False)

    def share_tls_sessions(self):
        """Let all users resume one another's TLS sessions (by default each user has its own, so
        a new user pays a full handshake, as a new browser does)."""
        return self._tls(share_sessions=True)

    def resolve(self, host, port, address):
        """Connect to `address` for `host`:`port` instead of asking the resolver (curl's
        ``--resolve``).

        >>> http.resolve("example.org", 443, "127.0.0.1").to_plan()["resolve"]
        [{'host': 'example.org', 'port': 443, 'address': '127.0.0.1'}]
        """
        return replace(self, host_mappings=self.host_mappings + ({"host": str(host), "port": int(port), "address": str(address)},))

    def enable_http2(self):
        """Speak HTTP/2 where the server offers it: https connections offer ``h2`` by ALPN and
        fall back to HTTP/1.1 when the server picks that (the summary counts them), as Gatling's
        ``enableHttp2``. http:// stays HTTP/1.1; see ``http2_prior_knowledge``."""
        return replace(self, http2="negotiate")

    def http2_prior_knowledge(self):
        """Speak HTTP/2 on every connection without asking: h2c on http://, ALPN ``h2`` alone on
        https. A server that does not speak it fails each request (``http2_not_supported``).

        >>> http.http2_prior_knowledge().to_plan()["http2"]
        'prior_knowledge'
        """
        return replace(self, http2="prior_knowledge")

    def accept_encoding_header(self, value):
        """The Accept-Encoding sent with every request (Gatling's ``acceptEncodingHeader``). The
        default is a browser's, ``gzip, deflate, br, zstd``; ``""`` sends none. Compressed bodies
        are decoded only when a check reads them.

        >>> http.accept_encoding_header("gzip").to_plan()["accept_encoding"]
        'gzip'
        """
        return replace(self, accept_encoding=str(value))

    def infer_html_resources(self):
        """Parse every HTML page for its scripts, style sheets, images and icons and fetch them
        after it, concurrently, each in a row named by its URL (Gatling's
        ``inferHtmlResources``). Pages' bodies are then read, up to ``max_body_bytes``.

        >>> http.infer_html_resources().to_plan()["infer_html_resources"]
        True
        """
        return replace(self, infer_resources=True)

    def max_connections_per_host(self, count):
        """HTTP/1.1 connections a user opens to one host to fetch resources and batches
        concurrently (default 6, as browsers). HTTP/2 uses streams on one connection instead."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise DslError(f"max_connections_per_host() needs a whole number of at least 1, got {count!r}")
        return replace(self, connections_per_host=count)

    @classmethod
    def check_given(cls, given):
        if len(given) > 1:
            raise DslError("a simulation has one HTTP protocol; several were given")

    @classmethod
    def into_plan(cls, plan, given):
        # Every plan has HTTP's settings: their defaults when none were given.
        plan["protocol"] = (given[0] if given else HttpProtocol()).to_plan()

    def to_plan(self):
        plan = {"follow_redirects": self.follow_redirects}
        if self.infer_resources:
            plan["infer_html_resources"] = True
        if self.connections_per_host is not None:
            plan["max_connections_per_host"] = self.connections_per_host
        if self.accept_encoding is not None:
            plan["accept_encoding"] = self.accept_encoding
        if self.http2 != "off":
            plan["http2"] = self.http2
        if self.tls:
            plan["tls"] = dict(self.tls)
        if self.host_mappings:
            plan["resolve"] = list(self.host_mappings)
        if self.base is not None:
            plan["base_url"] = self.base
        if self.header_pairs:
            plan["headers"] = [{"name": n, "value": v} for n, v in self.header_pairs]
        if self.secret_header_names:
            plan["secret_headers"] = list(self.secret_header_names)
        if self.connect_timeout_ms is not None:
            plan["connect_timeout_ms"] = self.connect_timeout_ms
        if self.request_timeout_ms is not None:
            plan["request_timeout_ms"] = self.request_timeout_ms
        if self.redirects is not None:
            plan["max_redirects"] = self.redirects
        if self.body_limit is not None:
            plan["max_body_bytes"] = self.body_limit
        return plan


class _Http:
    """``http(name)`` starts a request; ``http.base_url(...)`` starts a protocol, as in Gatling."""

    def __call__(self, name):
        return _RequestName(name)

    def base_url(self, url):
        return HttpProtocol().base_url(url)

    def header(self, name, value):
        return HttpProtocol().header(name, value)

    def headers(self, mapping):
        return HttpProtocol().headers(mapping)

    def secret_headers(self, *names):
        return HttpProtocol().secret_headers(*names)

    def request_timeout(self, seconds):
        return HttpProtocol().request_timeout(seconds)

    def disable_follow_redirect(self):
        return HttpProtocol().disable_follow_redirect()

    def disable_tls_verification(self):
        return HttpProtocol().disable_tls_verification()

    def ca_file(self, path):
        return HttpProtocol().ca_file(path)

    def client_certificate(self, certificate, key):
        return HttpProtocol().client_certificate(certificate, key)

    def resolve(self, host, port, address):
        return HttpProtocol().resolve(host, port, address)

    def enable_http2(self):
        return HttpProtocol().enable_http2()

    def accept_encoding_header(self, value):
        return HttpProtocol().accept_encoding_header(value)

    def http2_prior_knowledge(self):
        return HttpProtocol().http2_prior_knowledge()

    def infer_html_resources(self):
        return HttpProtocol().infer_html_resources()

    def max_connections_per_host(self, count):
        return HttpProtocol().max_connections_per_host(count)


http = _Http()


def batch_step(requests):
    """The plan step of ``batch(...)``: requests sent at once, none with resources."""
    if not requests:
        raise DslError("batch() needs at least one request")
    for request in requests:
        if not isinstance(request, HttpRequest):
            raise DslError(f"batch() takes requests (http(...).get(...)), got {request!r}")
        if request.resource_requests:
            raise DslError(f"batch(): request {request.name!r} has resources; a batch sends requests, not pages")
    return {"type": "batch", "requests": [r.to_request() for r in requests]}
