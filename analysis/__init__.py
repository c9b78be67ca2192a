"""Analysis of ringsum run directories: load (tables), charts (one function per question),
report (PNG/SVG charts, summary.md, report.html), cli (`ringsum report`)."""
