"""Measuring and improving the judge offline: candidate validators replayed on decided attempts
(shadow verdicts), compared with the live validator against analysts, promoted, and datasets out."""
