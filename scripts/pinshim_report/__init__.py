"""pinshim_report: reads pinshim's per-process JSON Lines logs and writes a text report,
a self-contained HTML page with SVG charts, or a Chrome trace. Standard library only."""
