"""A real Django site for seed 000's data-driven login (examples/csv_login.py): Django's own
authentication, sessions and CSRF protection, in one file with its settings in code.

Routes:

- ``GET /login/``: the login form, with Django's CSRF token (``csrfmiddlewaretoken``);
- ``POST /login/``: ``username``, ``password`` and the token; on success a 302 to ``/account/``,
  else the form again (200) with an error;
- ``GET /account/``: ``Welcome, <username>`` and a logout form with a fresh token (Django
  rotates the token at login); without a session, a 302 to ``/login/``;
- ``POST /logout/``: ends the session, then a 302 to ``/login/`` (Django 5 logs out by POST only);
- ``GET /signup/``: a sign-up form with the CSRF token; ``POST /signup/``: ``username``,
  ``password`` and the token create the user (a row of Django's ``auth_user`` table), then a 302
  to ``/login/``; a name already taken gets the form again (200) with an error;
- ``GET /upload/``: (logged in) a multipart form with the CSRF token, a ``title`` and a
  ``document`` file; ``POST /upload/`` stores nothing but counts the file: its name, size and
  SHA-256, and answers a page saying so (``Received NAME (N bytes, sha256 HEX)``), which also
  holds the notes widget: JavaScript that reads the ``csrftoken`` cookie and POSTs a note as
  JSON with ``X-CSRFToken`` (the AJAX pattern Django documents), with a client-made uuid and a
  ``_=<epoch ms>`` cache buster;
- ``POST /api/notes/``: (logged in, ``X-CSRFToken``) JSON ``{"text": ..., "client_id": ...}``
  creates a note: ``{"id": N, ...}`` (ids count up across the site); ``GET /api/notes/N/``: that
  note, 404 unless it is the user's own;
- ``GET /confirm/``: a form with the CSRF token and a hidden ``challenge``: a word, the next of a
  list at each visit, so two visits never get the same (a value that looks like no token: only a
  replay shows that it changes); ``POST /confirm/``
  with the same word: a 302 to ``/account/``, counted; another word: 400;
- ``GET /stats/``: JSON, no login needed: successful logins and logouts per username, failed
  logins, sign-ups, requests refused by the CSRF check, the number of users, the uploads (user,
  file name, size, sha256) and the notes created and read per username.

The users come from a CSV file with ``username`` and ``password`` columns (examples/users.csv),
created at start in a fresh SQLite database in ``DJANGO_LOGIN_DATA_DIR`` (a new temporary
directory when unset). The server is Django's ``runserver``, threaded, without its reloader.
Run it by hand for the example::

    DJANGO_LOGIN_USERS=examples/users.csv python3 tests/apps/django_login/app.py --port 8000
    horde run examples/csv_login.py -D base_url=http://127.0.0.1:8000 -D users=50

The tests start it with a free port (tests/conftest.py, the ``django_login`` fixture).
"""

import argparse
import csv
import os
import secrets
import sys
import tempfile
import threading
from collections import Counter

import django
from django.conf import settings
from django.contrib.auth.hashers import PBKDF2PasswordHasher

MODULE = __name__


class QuickPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """Django's default hasher with far fewer iterations: a login costs microseconds instead of
    half a second of CPU, so the load test measures the site, not the key stretching. The
    hashing and the checks are Django's own all the same."""

    algorithm = "pbkdf2_sha256_quick"
    iterations = 1000


LOGIN_PAGE = """<!doctype html>
<title>Log in</title>
<h1>Log in</h1>
{% if form.errors %}<p class="error">Please enter a correct username and password.</p>{% endif %}
<form method="post" action="/login/">
  {% csrf_token %}
  <input type="text" name="username" id="id_username">
  <input type="password" name="password" id="id_password">
  <button type="submit">Log in</button>
</form>
"""

SIGNUP_PAGE = """<!doctype html>
<title>Sign up</title>
<h1>Sign up</h1>
{% if error %}<p class="error">{{ error }}</p>{% endif %}
<form method="post" action="/signup/">
  {% csrf_token %}
  <input type="text" name="username" id="id_username">
  <input type="password" name="password" id="id_password">
  <button type="submit">Sign up</button>
</form>
"""

ACCOUNT_PAGE = """<!doctype html>
<title>Account</title>
<p id="welcome">Welcome, {{ user.username }}</p>
<p><a id="upload" href="/upload/">Upload a document</a></p>
<form method="post" action="/logout/">
  {% csrf_token %}
  <button type="submit">Log out</button>
</form>
"""


UPLOAD_PAGE = """<!doctype html>
<title>Upload</title>
<h1>Upload a document</h1>
{% if received %}<p id="received">Received {{ received.name }} ({{ received.size }} bytes, sha256 {{ received.sha256 }})</p>{% endif %}
<form method="post" action="/upload/" enctype="multipart/form-data">
  {% csrf_token %}
  <input type="text" name="title" id="id_title">
  <input type="file" name="document" id="id_document">
  <button type="submit" id="send">Upload</button>
</form>
<p><input type="text" id="note"> <button type="button" id="add-note">Add a note</button></p>
<p id="note-saved"></p>
<script>
// Django's documented AJAX pattern: the token is read from the csrftoken cookie.
function cookie(name) {
  const pair = document.cookie.split("; ").find((c) => c.startsWith(name + "="));
  return pair ? decodeURIComponent(pair.split("=")[1]) : null;
}
document.getElementById("add-note").addEventListener("click", async () => {
  const created = await fetch("/api/notes/?_=" + Date.now(), {
    method: "POST",
    headers: {"Content-Type": "application/json", "X-CSRFToken": cookie("csrftoken")},
    body: JSON.stringify({text: document.getElementById("note").value, client_id: crypto.randomUUID()}),
  });
  const note = await created.json();
  const read = await fetch("/api/notes/" + note.id + "/");
  document.getElementById("note-saved").textContent = "Saved note " + (await read.json()).id;
});
</script>
<form method="post" action="/logout/">
  {% csrf_token %}
  <button type="submit" id="logout">Log out</button>
</form>
"""


CONFIRM_PAGE = """<!doctype html>
<title>Confirm</title>
<form method="post" action="/confirm/">
  {% csrf_token %}
  <input type="hidden" name="challenge" value="{{ challenge }}">
  <button type="submit">Confirm</button>
</form>
"""

CHALLENGE_WORDS = ("walnut", "alder", "birch", "cedar", "maple", "rowan", "spruce", "hazel", "larch", "poplar")


def configure(data_dir):
    settings.configure(
        DEBUG=False,
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS=["127.0.0.1", "localhost", "[::1]"],
        ROOT_URLCONF=MODULE,
        INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth"],
        MIDDLEWARE=[
            "django.contrib.sessions.middleware.SessionMiddleware",
            "django.middleware.csrf.CsrfViewMiddleware",
            "django.contrib.auth.middleware.AuthenticationMiddleware",
        ],
        # Sessions in signed cookies: a login writes nothing but the user's last_login.
        SESSION_ENGINE="django.contrib.sessions.backends.signed_cookies",
        DATABASES={
            "default": {
                "ENGINE": "django.db.backends.sqlite3",
                "NAME": os.path.join(data_dir, "db.sqlite3"),
                # Threads wait for each other's writes (last_login) instead of failing.
                "OPTIONS": {"timeout": 30},
            }
        },
        TEMPLATES=[
            {
                "BACKEND": "django.template.backends.django.DjangoTemplates",
                "OPTIONS": {
                    "loaders": [
                        ("django.template.loaders.locmem.Loader",
                         {"registration/login.html": LOGIN_PAGE, "account.html": ACCOUNT_PAGE,
                          "signup.html": SIGNUP_PAGE, "upload.html": UPLOAD_PAGE, "confirm.html": CONFIRM_PAGE}),
                    ],
                    "context_processors": ["django.contrib.auth.context_processors.auth"],
                },
            }
        ],
        PASSWORD_HASHERS=[f"{MODULE}.QuickPBKDF2PasswordHasher"],
        LOGIN_URL="/login/",
        LOGIN_REDIRECT_URL="/account/",
        LOGOUT_REDIRECT_URL="/login/",
        CSRF_FAILURE_VIEW=f"{MODULE}.csrf_failure",
        USE_TZ=True,
    )
    django.setup()


# What the site saw, for /stats/. One process serves every request (threads), so a lock is all
# the counts need.
_lock = threading.Lock()
_logins = Counter()
_logouts = Counter()
_failed_logins = [0]
_signups = [0]
_csrf_failures = [0]
_uploads = []
_notes = {}  # id -> (username, text, client_id)
_notes_read = Counter()
_confirmations = [0]
_challenges = [0]


def _count(counter, key):
    with _lock:
        counter[key] += 1


def _on_login(sender, request, user, **kwargs):
    _count(_logins, user.get_username())


def _on_logout(sender, request, user, **kwargs):
    if user is not None:
        _count(_logouts, user.get_username())


def _on_login_failed(sender, credentials, request=None, **kwargs):
    with _lock:
        _failed_logins[0] += 1


def csrf_failure(request, reason=""):
    from django.http import HttpResponseForbidden

    with _lock:
        _csrf_failures[0] += 1
    return HttpResponseForbidden(f"CSRF verification failed: {reason}")


def stats(request):
    from django.contrib.auth.models import User
    from django.http import JsonResponse

    with _lock:
        body = {
            "logins": dict(_logins),
            "logouts": dict(_logouts),
            "failed_logins": _failed_logins[0],
            "signups": _signups[0],
            "csrf_failures": _csrf_failures[0],
            "uploads": list(_uploads),
            "notes_created": dict(Counter(user for user, _, _ in _notes.values())),
            "notes_read": dict(_notes_read),
            "confirmations": _confirmations[0],
        }
    body["users"] = User.objects.count()
    return JsonResponse(body)


def account(request):
    from django.shortcuts import render

    return render(request, "account.html")


def signup(request):
    from django.contrib.auth.models import User
    from django.db import IntegrityError
    from django.http import HttpResponseRedirect
    from django.shortcuts import render

    if request.method != "POST":
        return render(request, "signup.html")
    username, password = request.POST.get("username", ""), request.POST.get("password", "")
    if not username or not password:
        return render(request, "signup.html", {"error": "A name and a password, please."})
    try:
        User.objects.create_user(username, password=password)
    except IntegrityError:
        return render(request, "signup.html", {"error": "That name is taken."})
    with _lock:
        _signups[0] += 1
    return HttpResponseRedirect("/login/")


def upload(request):
    import hashlib

    from django.shortcuts import render

    if request.method != "POST":
        return render(request, "upload.html")
    document = request.FILES.get("document")
    if document is None:
        return render(request, "upload.html", status=400)
    data = document.read()
    received = {"user": request.user.get_username(), "name": document.name, "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest(), "title": request.POST.get("title", "")}
    with _lock:
        _uploads.append(received)
    return render(request, "upload.html", {"received": received})


def notes(request):
    import json

    from django.http import JsonResponse

    if request.method != "POST":
        return JsonResponse({"error": "POST a note"}, status=405)
    try:
        body = json.loads(request.body)
        text, client_id = str(body["text"]), str(body["client_id"])
    except (ValueError, KeyError, TypeError):
        return JsonResponse({"error": "expected JSON with text and client_id"}, status=400)
    with _lock:
        note_id = len(_notes) + 1
        _notes[note_id] = (request.user.get_username(), text, client_id)
    return JsonResponse({"id": note_id, "text": text, "client_id": client_id}, status=201)


def note(request, note_id):
    from django.http import JsonResponse

    with _lock:
        found = _notes.get(note_id)
        if found is not None and found[0] == request.user.get_username():
            _notes_read[found[0]] += 1
    if found is None or found[0] != request.user.get_username():
        return JsonResponse({"error": "not_found"}, status=404)
    return JsonResponse({"id": note_id, "text": found[1], "client_id": found[2]})


def confirm(request):
    from django.http import HttpResponseBadRequest, HttpResponseRedirect
    from django.shortcuts import render

    if request.method != "POST":
        with _lock:
            _challenges[0] += 1
            request.session["challenge"] = CHALLENGE_WORDS[_challenges[0] % len(CHALLENGE_WORDS)]
        return render(request, "confirm.html", {"challenge": request.session["challenge"]})
    if request.POST.get("challenge") != request.session.get("challenge"):
        return HttpResponseBadRequest("wrong challenge")
    with _lock:
        _confirmations[0] += 1
    return HttpResponseRedirect("/account/")


def create_users(path):
    """The users of the CSV file, created in the empty database."""
    from django.contrib.auth.models import User

    with open(path, newline="") as file:
        rows = list(csv.DictReader(file))
    missing = {"username", "password"} - set(rows[0] if rows else ())
    if missing:
        sys.exit(f"{path}: needs the columns username and password (missing: {', '.join(sorted(missing))})")
    for row in rows:
        User.objects.create_user(row["username"], password=row["password"])
    return len(rows)


def main():
    parser = argparse.ArgumentParser(description="The Django login site of examples/csv_login.py")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--users", default=os.environ.get("DJANGO_LOGIN_USERS"),
                        help="CSV file of username,password (default: $DJANGO_LOGIN_USERS)")
    args = parser.parse_args()
    if not args.users:
        parser.error("the users' CSV file is needed: --users FILE or DJANGO_LOGIN_USERS")
    data_dir = os.environ.get("DJANGO_LOGIN_DATA_DIR") or tempfile.mkdtemp(prefix="django-login-")
    configure(data_dir)

    from django.contrib.auth import signals
    from django.contrib.auth.decorators import login_required
    from django.contrib.auth.views import LoginView, LogoutView
    from django.core.management import call_command
    from django.urls import path

    global urlpatterns
    urlpatterns = [
        path("login/", LoginView.as_view()),
        path("account/", login_required(account)),
        path("logout/", LogoutView.as_view()),
        path("signup/", signup),
        path("stats/", stats),
        path("upload/", login_required(upload)),
        path("confirm/", confirm),
        path("api/notes/", login_required(notes)),
        path("api/notes/<int:note_id>/", login_required(note)),
    ]
    signals.user_logged_in.connect(_on_login)
    signals.user_logged_out.connect(_on_logout)
    signals.user_login_failed.connect(_on_login_failed)

    call_command("migrate", verbosity=0, interactive=False)
    count = create_users(args.users)
    print(f"django login site: {count} users from {args.users}, database in {data_dir}", flush=True)
    call_command("runserver", f"127.0.0.1:{args.port}", use_reloader=False, use_threading=True)


if __name__ == "__main__":
    main()
