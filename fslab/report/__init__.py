"""Reports: terminal verdicts, offline HTML, Markdown, CSV, Parquet/JSON."""
