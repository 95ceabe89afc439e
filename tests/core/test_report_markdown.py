"""The audit report renders the answer's Markdown as the desk does: structure kept, no HTML from the
answer, links and images inert (issue 30, item 15)."""

from __future__ import annotations

import re
from pathlib import Path

from core.bundle import write_report
from core.store import Store
from tests.core.test_bundle import make_case
from tests.core.test_report import assert_standalone

ANSWER = """## Depth of the Sirena Deep

The figures **disagree**:

- about 10,809 m (2014 survey)
- about 10,935 m ([NOAA](https://evil.example/track?x=1 "t"))

| survey | depth |
| --- | --- |
| 2014 | 10,809 m |

<script>alert("x")</script> and <b onclick="steal()">bold?</b>

![chart](http://evil.example/chart.png)

[bad](javascript:alert(1))
"""


async def test_report_renders_the_answers_markdown_safely(store: Store, tmp_path: Path) -> None:
    task_id = await make_case(store, answer=ANSWER)
    html = (await write_report(store, task_id, tmp_path / "report.html")).read_text(encoding="utf-8")
    answer = html[html.index('<div class="answer">') :]
    answer = answer[: answer.index("</div>")]
    assert "<h2>Depth of the Sirena Deep</h2>" in answer  # structure, not raw "## …" text
    assert "<strong>disagree</strong>" in answer
    assert re.search(r"<ul>\s*<li>about 10,809 m \(2014 survey\)</li>", answer)
    assert "<table>" in answer and "<td>10,809 m</td>" in answer
    assert "## Depth" not in answer and "<pre>" not in answer  # not raw Markdown in a monospace block
    # The answer's own HTML is text on the page, never markup.
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in answer
    assert "&lt;b onclick=&quot;steal()&quot;&gt;" in answer and "<b " not in answer
    # Links keep their text and show their address, but nothing can be followed or fetched.
    assert "NOAA" in answer and "(https://evil.example/track?x=1)" in answer
    assert "<a " not in answer and "href=" not in answer
    assert "[image: chart] (http://evil.example/chart.png)" in answer and "<img" not in answer
    assert "javascript:" not in answer.replace("[bad](javascript:alert(1))", "")
    assert_standalone(html)
