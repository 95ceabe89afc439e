# Regenerates script.json (the demo's scripted-provider script): python resources/demo/make_script.py
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def verdict(status, score, *, issues=(), revise="", category="none", cites=(), gaps=(), missing=()):
    return json.dumps(
        {
            "goal_achievement": {
                "accepted": "The answer addresses the question directly.",
                "rejected": "The answer misstates the key figure.",
                "insufficient_evidence": "The answer addresses the question, but the evidence does not cover its key claim.",
            }[status],
            "completeness": "Judged against every part of the task.",
            "rule_compliance": "No analyst rules are configured.",
            "status": status,
            "score": score,
            "issues": list(issues),
            "missing_requirements": list(missing),
            "evidence_gaps": list(gaps),
            "recommended_revision_prompt": revise,
            "category": category,
            "citations": [{"claim": c, "evidence_id": e, "quote": q, "verdict": v} for c, e, q, v in cites],
        },
        indent=2,
    )


def search(q):
    return {"tool_calls": [{"name": "search_corpus", "arguments": {"query": q}}]}


def read(doc):
    return {"tool_calls": [{"name": "read_document", "arguments": {"document_id": doc}}]}


conv = []
# Team briefing (first: synthesis, then nodes; node prompts also carry the overall task). The
# synthesis matches on its own words *and* this task's, so another team's synthesis (a planned team
# on the offline replay model) gets the catch-all answer, not this briefing.
conv += [
    {
        "model": "agent",
        "match": "(?s)(?=.*source of truth)(?=.*rotation of Venus)",
        "turns": [
            {
                "content": "## Briefing\n\n**Venus.** A sidereal day on Venus lasts about 243 Earth days, longer than its "
                "224.7-day year, and Venus rotates retrograde.\n\n**Honey bees.** The team member researching bee "
                "communication failed (the model service kept erroring), so this part is missing: I cannot say how "
                "the waggle dance encodes direction from the gathered evidence."
            }
        ],
    },
    {
        "model": "agent",
        "match": "sidereal day on Venus",
        "turns": [
            search("Venus rotation sidereal day"),
            read("venus-rotation.md"),
            {
                "content": "A sidereal day on Venus takes about 243 Earth days; its year is about 224.7 Earth days; it rotates retrograde."
            },
        ],
    },
    {"model": "agent", "match": "waggle dance of honey bees", "turns": [{"error": "server_error"}]},
]
conv += [
    {
        "model": "agent",
        "match": "What\\ causes\\ ocean\\ tides,\\ and\\ how\\ many\\ high\\ tides\\ do\\ most\\ coasts\\ see\\ each\\ day\\?",
        "turns": [
            search("ocean tides moon high tides per day"),
            read("tides-and-the-moon.md"),
            {
                "content": "Ocean tides are caused mainly by the Moon's gravity, with a smaller contribution from the Sun. "
                "The difference in pull across the Earth raises two bulges of water, so most coasts see **two high "
                "tides and two low tides each day** (source: *Tides and the Moon*)."
            },
        ],
    },
    {
        "model": "agent",
        "match": "What\\ is\\ the\\ exact\\ speed\\ of\\ light\\ in\\ a\\ vacuum,\\ and\\ why\\ is\\ it\\ exact\\?",
        "turns": [
            search("speed of light vacuum"),
            {"content": "Light travels at roughly 300,000 km/s in a vacuum; that is the exact figure."},
            read("speed-of-light.txt"),
            {
                "content": "The speed of light in a vacuum is c = 299 792 458 m/s exactly. It is exact by definition: since "
                "1983 the metre has been defined from c, so c no longer needs measuring (source: *Speed of light*)."
            },
        ],
    },
    {
        "model": "agent",
        "match": "How\\ deep\\ is\\ the\\ Sirena\\ Deep\\ in\\ the\\ Mariana\\ Trench\\?",
        "turns": [
            search("Sirena Deep depth Mariana"),
            {
                "content": "The Sirena Deep is about 10,800 metres deep, the second-deepest point of the Mariana Trench."
            },
        ],
    },
    {
        "model": "agent",
        "match": "How\\ long\\ is\\ the\\ Great\\ Wall\\ of\\ China,\\ counting\\ all\\ its\\ branches\\?",
        "turns": [
            search("Great Wall length"),
            read("great-wall.html"),
            {
                "content": "The 2012 survey measured all branches of the Great Wall at 21,196.18 kilometres; the Ming wall alone is about 8,850 km."
            },
        ],
    },
    {
        "model": "agent",
        "match": "Compare\\ the\\ boiling\\ point\\ of\\ water\\ at\\ sea\\ level\\ with\\ its\\ boiling\\ point\\ on\\ the\\ summit\\ of\\ Mount\\ Everest\\.",
        "turns": [
            search("boiling point altitude"),
            read("boiling-point-and-altitude.md"),
            search("Everest summit pressure"),
            read("mount-everest.md"),
            search("pressure cooker boiling"),
            search("standard atmosphere kPa"),
            search("cooking at altitude"),
            search("boiling point per 1000 m"),
            {
                "content": "From the evidence gathered: water boils at about 100 °C at sea level (one standard atmosphere) and "
                "at about 70 °C on the summit of Mount Everest (8,849 m), because air pressure falls with altitude. "
                "I could not confirm the exact summit pressure."
            },
        ],
    },
    {
        "model": "agent",
        "match": "What\\ is\\ the\\ Rosetta\\ Stone\\ and\\ why\\ did\\ it\\ matter\\?",
        "turns": [
            search("Rosetta Stone"),
            read("rosetta-stone.txt"),
            {
                "content": "The Rosetta Stone carries a decree of 196 BC written three times, in hieroglyphic, Demotic and "
                "Greek; found in July 1799, it became the key to deciphering Egyptian hieroglyphs."
            },
        ],
    },
    {
        "model": "agent",
        "match": "What\\ did\\ the\\ Antikythera\\ mechanism\\ compute\\?",
        "turns": [
            search("Antikythera mechanism"),
            {"content": "The Antikythera mechanism is an ancient Greek geared device that modelled the sky."},
        ],
    },
]
# Validators: the prompt holds the task, evidence, history and answer of one task only.
conv += [
    {
        "model": "validator",
        "match": "Brief\\ me\\ on\\ two\\ topics:\\ the\\ rotation\\ of\\ Venus\\ and\\ how\\ honey\\ bees\\ communicate\\.",
        "turns": [
            {
                "content": verdict(
                    "insufficient_evidence",
                    0.55,
                    issues=["The honey-bee half of the briefing is missing: the node researching it failed."],
                    gaps=["No evidence on the waggle dance was gathered."],
                    category="incomplete",
                    revise="Research how the waggle dance encodes direction and distance, then complete the briefing.",
                    cites=[
                        (
                            "A sidereal day on Venus lasts about 243 Earth days",
                            "E2",
                            "(a sidereal day) takes about",
                            "supported",
                        )
                    ],
                )
            }
        ],
    },
    {
        "model": "validator",
        "match": "What\\ causes\\ ocean\\ tides,\\ and\\ how\\ many\\ high\\ tides\\ do\\ most\\ coasts\\ see\\ each\\ day\\?",
        "turns": [
            {
                "content": verdict(
                    "accepted",
                    0.93,
                    cites=[
                        (
                            "Tides are caused mainly by the Moon's gravity",
                            "E2",
                            "Ocean tides are caused mainly by the Moon's gravity",
                            "supported",
                        ),
                        (
                            "Most coasts see two high tides a day",
                            "E2",
                            "most coasts see two high tides and two low tides each day",
                            "supported",
                        ),
                    ],
                )
            }
        ],
    },
    {
        "model": "validator",
        "match": "299 792 458 m/s exactly",
        "turns": [
            {
                "content": verdict(
                    "accepted",
                    0.9,
                    cites=[("c is exact", "E1", "is exactly 299,792,458 metres per second", "supported")],
                )
            }
        ],
    },
    {
        "model": "validator",
        "match": "What\\ is\\ the\\ exact\\ speed\\ of\\ light\\ in\\ a\\ vacuum,\\ and\\ why\\ is\\ it\\ exact\\?",
        "turns": [
            {
                "content": verdict(
                    "rejected",
                    0.25,
                    issues=[
                        "The answer calls 300,000 km/s exact; the evidence gives the exact value 299,792,458 m/s and calls 300,000 km/s approximate."
                    ],
                    category="goal_missed",
                    revise="Give the exact value of c from the evidence (299,792,458 m/s) and say why it is exact.",
                    cites=[("300,000 km/s is the exact figure", "E1", "speed of light", "contradicted")],
                )
            }
        ],
    },
    {
        "model": "validator",
        "match": "How\\ deep\\ is\\ the\\ Sirena\\ Deep\\ in\\ the\\ Mariana\\ Trench\\?",
        "turns": [
            {
                "content": verdict(
                    "insufficient_evidence",
                    0.35,
                    gaps=[
                        "The gathered evidence never mentions the Sirena Deep; its depth cannot be confirmed or refuted."
                    ],
                    category="incomplete",
                    revise="Find a source that covers the Sirena Deep, or say the corpus does not cover it.",
                )
            }
        ],
    },
    {
        "model": "validator",
        "match": "How\\ long\\ is\\ the\\ Great\\ Wall\\ of\\ China,\\ counting\\ all\\ its\\ branches\\?",
        "turns": [
            {"content": "The answer looks right to me overall."},
            {"content": "Verdict: accepted, score 0.9."},
            {"content": "Verdict: accepted, score 0.9."},
        ],
    },
    {
        "model": "validator",
        "match": "Compare\\ the\\ boiling\\ point\\ of\\ water\\ at\\ sea\\ level\\ with\\ its\\ boiling\\ point\\ on\\ the\\ summit\\ of\\ Mount\\ Everest\\.",
        "turns": [
            {
                "content": verdict(
                    "accepted",
                    0.82,
                    gaps=["The run reached its tool budget; the answer says what it could not confirm."],
                    cites=[("Water boils at about 70 °C on Everest", "E2", "about 70 °C", "supported")],
                )
            }
        ],
    },
    {
        "model": "validator",
        "match": "What\\ is\\ the\\ Rosetta\\ Stone\\ and\\ why\\ did\\ it\\ matter\\?",
        "turns": [
            {
                "content": verdict(
                    "accepted",
                    0.95,
                    cites=[("Found in July 1799", "E2", "found the stone in July 1799", "supported")],
                )
            }
        ],
    },
    {
        "model": "validator",
        "match": "What\\ did\\ the\\ Antikythera\\ mechanism\\ compute\\?",
        "turns": [
            {
                "content": verdict(
                    "accepted",
                    0.78,
                    cites=[("An ancient Greek geared device", "E1", "Antikythera", "supported")],
                )
            }
        ],
    },
]
# Revise on a demo task: turn k answers a request holding k assistant messages, and a revision's
# request holds the earlier attempts' messages, so the turns after a conversation's own answer the
# revised attempts (up to REVISIONS of them) with that task's answer, restated. Without them a
# revision ran past the script's end and the attempt ended in the script's own error text.
REVISIONS = 6
REVISED = (
    "\n\n*Revised at the analyst's request:* I went over the same sources again; the answer above "
    "is what they support."
)
for c in conv:
    answers = [t["content"] for t in c["turns"] if c["model"] == "agent" and t.get("content")]
    if answers:  # the bees node has none: it fails by design, revised or not
        c["turns"] += [{"content": answers[-1] + REVISED}] * REVISIONS
json.dump({"conversations": conv}, open(HERE / "script.json", "w"), indent=1, ensure_ascii=False)
json.dump(
    {
        "id": "briefing",
        "mode": "parallel",
        "nodes": [
            {
                "id": "venus",
                "role": "You research planetary facts from the document corpus.",
                "task": "Report the length of a sidereal day on Venus and how it compares with its year.",
                "tools": ["search_corpus", "read_document"],
                "max_tool_iterations": 4,
            },
            {
                "id": "bees",
                "role": "You research animal behaviour from the document corpus.",
                "task": "Explain the waggle dance of honey bees: what it encodes and how.",
                "tools": ["search_corpus", "read_document"],
                "max_tool_iterations": 4,
            },
        ],
    },
    open(HERE / "teams" / "briefing.json", "w"),
    indent=2,
)
