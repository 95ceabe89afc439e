"""Case bundles (tamper-evident export, verification, import, read-only open) and audit reports.

Names load on first use (PEP 562): the desk reads ``redact`` at start-up and should not pay
for export, import and report rendering until a bundle is actually used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.lazy import lazy_exports

if TYPE_CHECKING:
    from core.bundle.export import ExportSummary, export_bundle
    from core.bundle.format import BundleError
    from core.bundle.importer import ImportSummary, import_bundle
    from core.bundle.opened import BundleTask, OpenedBundle, open_bundle
    from core.bundle.report import (
        ReportData,
        build_report_data,
        render_report,
        report_data_from_bundle,
        write_report,
        write_report_from_bundle,
    )
    from core.bundle.verify import VerificationReport, verify_bundle

_HOMES = {
    "BundleError": "core.bundle.format",
    "BundleTask": "core.bundle.opened",
    "ExportSummary": "core.bundle.export",
    "ImportSummary": "core.bundle.importer",
    "OpenedBundle": "core.bundle.opened",
    "ReportData": "core.bundle.report",
    "VerificationReport": "core.bundle.verify",
    "build_report_data": "core.bundle.report",
    "export_bundle": "core.bundle.export",
    "import_bundle": "core.bundle.importer",
    "open_bundle": "core.bundle.opened",
    "render_report": "core.bundle.report",
    "report_data_from_bundle": "core.bundle.report",
    "verify_bundle": "core.bundle.verify",
    "write_report": "core.bundle.report",
    "write_report_from_bundle": "core.bundle.report",
}


__getattr__ = lazy_exports(__name__, _HOMES, globals())


__all__ = [
    "BundleError",
    "BundleTask",
    "ExportSummary",
    "ImportSummary",
    "OpenedBundle",
    "ReportData",
    "VerificationReport",
    "build_report_data",
    "export_bundle",
    "import_bundle",
    "open_bundle",
    "render_report",
    "report_data_from_bundle",
    "verify_bundle",
    "write_report",
    "write_report_from_bundle",
]
