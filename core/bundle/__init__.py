"""Case bundles (tamper-evident export, verification, import, read-only open) and audit reports."""

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
