"""The calibration figures as a standalone HTML page (``evidence-desk calibration --html FILE``).

Autoescaped like the audit report: model names and warning codes come from stored data. The
matrix is shaded by share so it reads as a heatmap without any script or plotting library.
"""

from __future__ import annotations

from jinja2 import Environment, StrictUndefined

from core.calibration import DECISIONS, Calibration, judgement_lines, rates_lines
from core.domain.agreement import Rate

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Validator calibration</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #111; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.7em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.warn { color: #b45309; font-weight: 600; }
</style></head><body>
<h1>Validator calibration</h1>
<p>{{ c.n }} decided attempts · Cohen's kappa <strong>{{ num(c.kappa) }}</strong> · agreement
<strong>{{ num(c.agreement) }}</strong> (agreement: validator accepted ⇔ analyst satisfied)</p>
<h2>How often the validator is wrong</h2>
{% for line in rates %}<p{% if loop.index == 3 %} class="warn"{% endif %}>{{ line }}</p>
{% endfor %}
{% if c.citations %}<h2>Citation precision (analysts' marks)</h2>
<p>{{ c.citations.marked }} citations marked · precision {{ rate(c.citations.precision) }}</p>
<table><tr><th>validator model</th><th>validator version</th><th>right</th><th>wrong</th><th>precision [95% interval]</th></tr>
{% for v in c.citations.by_validator %}<tr><td>{{ v.validator_model }}</td><td>{{ v.validator_version }}</td><td>{{ v.right }}</td><td>{{ v.wrong }}</td><td>{{ rate(v.precision) }}</td></tr>
{% endfor %}</table>{% endif %}
{% if judgements %}<h2>Blind review and second reviews</h2>
{% for line in judgements %}<p>{{ line }}</p>{% endfor %}{% endif %}
<h2>Validator status against analyst decision</h2>
<table><tr><th>validator \\ analyst</th>{% for d in decisions %}<th>{{ d }}</th>{% endfor %}</tr>
{% for status, row in c.matrix.items() %}<tr><td>{{ status | replace("_", " ") }}</td>
{% for d in decisions %}<td style="background: rgba(37, 99, 235, {{ '%.2f' | format(0.75 * row[d] / top) }})">{{ row[d] }}</td>{% endfor %}</tr>
{% endfor %}</table>
{% for title, table in [("category", c.by_category), ("validator model", c.by_model), ("validator version", c.by_version), ("week starting", c.weekly)] %}
<h2>Agreement by {{ title }}</h2>
<table><tr><th>{{ title }}</th><th>decided</th><th>agreement</th><th>kappa</th></tr>
{% for key, a in table.items() %}<tr><td>{{ key }}</td><td>{{ a.n }}</td><td>{{ num(a.rate) }}</td><td>{{ num(a.kappa) }}</td></tr>
{% endfor %}</table>
{% endfor %}
<h2>Warnings before an override or revise</h2>
<table><tr><th>warning</th><th>decided</th><th>then overridden</th><th>then revised</th><th>share</th></tr>
{% for w in c.warnings %}<tr><td>{{ w.code }}</td><td>{{ w.decided }}</td><td>{{ w.overridden }}</td><td>{{ w.revised }}</td><td>{{ '%.0f' | format(100 * w.override_or_revise_rate) }}%</td></tr>
{% endfor %}</table>
</body></html>
"""


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _rate(r: Rate) -> str:
    if r.value is None:
        return "n/a"
    return f"{r.value:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] of {r.n}"


def calibration_html(cal: Calibration) -> str:
    env = Environment(autoescape=True, undefined=StrictUndefined)
    top = max([1, *(n for row in cal.matrix.values() for n in row.values())])
    rates = rates_lines(cal.rates) if cal.rates is not None else []
    judgements = [line.strip() for line in judgement_lines(cal) if line.strip()]
    return env.from_string(_TEMPLATE).render(
        c=cal, decisions=DECISIONS, num=_num, rate=_rate, top=top, rates=rates, judgements=judgements
    )


__all__ = ["calibration_html"]
