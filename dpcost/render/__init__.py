"""Reports -> tables and documents, one module per concern. Formatters return objects or strings; only the CLI
prints.

- table.py: the `Table` every report is laid out as, and cell formatters
- formats.py: tables to rich, markdown, CSV; documents to JSON, YAML
- estimate.py, memory.py, sweep.py, collectives.py, calibration.py, catalog.py: one per kind of report
The machine contract (JSON, YAML) is the report models themselves (engine/report.py), dumped.
"""
