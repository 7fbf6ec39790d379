#!/usr/bin/env bash
# The report page, live in the browser while the run goes (docs/report.md, "Live: the dashboard").
#   examples/live_dashboard.sh http://127.0.0.1:8080/
# horde prints "horde: dashboard at http://127.0.0.1:PORT/"; --open opens it where a browser
# is installed. The page is updated every interval, then shows the final report (report.html).
# --dashboard-control adds a Stop button that stops the run as Ctrl-C does.
set -euo pipefail
url="${1:-http://127.0.0.1:8080/}"
shift || true
horde http "$url" -c 10 -d "${DURATION:-60s}" --dashboard "${DASHBOARD_ADDRESS:-127.0.0.1:0}" --dashboard-control "$@"
