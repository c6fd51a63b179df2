"""Reports and the dashboard: report.md / csv / json, the static site, the single-file page."""
