"""Validator versions: what makes a judge, the short id over it, and that every verdict records it."""

from __future__ import annotations

from pathlib import Path

from core.domain.status import ValidationStatus
from core.profiles import ModelProfile, ModelRole
from core.store import Store
from core.validation.identity import (
    IdentityCache,
    endpoint_host,
    validator_identity,
    verdict_policy_settings,
)
from core.validation.prompt import TemplateSet, render_template, template_digests, use_templates
from tests.core.conftest import ScriptFactory
from tests.core.test_coherence import ANSWER, FACT, accepted
from tests.core.test_validation import packet, run_validation, script


def test_endpoint_host_keeps_no_credentials() -> None:
    assert endpoint_host("https://user:s3cret@api.example.com:8443/v1?key=abc") == "api.example.com:8443"
    assert endpoint_host("http://127.0.0.1:11434") == "127.0.0.1:11434"
    assert endpoint_host("api.example.com") == "api.example.com"
    assert endpoint_host(None) is None and endpoint_host("") is None


def test_every_part_of_the_identity_changes_the_version(make_settings: ScriptFactory, tmp_path: Path) -> None:
    base = make_settings()
    v0 = validator_identity(base).version
    assert len(v0) == 12 and validator_identity(base).version == v0  # stable
    tuned = base.model_copy(
        update={"profiles": {ModelRole.VALIDATOR: ModelProfile(temperature=0.3, api_base="http://h:1/v1")}}
    )
    other_model = base.model_copy(update={"validator_model": "scripted/other"})
    policy = base.model_copy(update={"require_verified_citations": True})
    rules = tmp_path / "rules.md"
    rules.write_text("Cite the survey year.", encoding="utf-8")
    with_rules = base.model_copy(update={"rules": rules})
    templates = TemplateSet.of({"validation_rubric.md.j2": "Be strict."}, "workspace@1")
    versions = {
        v0,
        validator_identity(tuned).version,
        validator_identity(other_model).version,
        validator_identity(policy).version,
        validator_identity(with_rules).version,
        validator_identity(base, templates).version,
    }
    assert len(versions) == 6
    assert validator_identity(tuned).endpoint_host == "h:1"
    before = validator_identity(with_rules).version
    rules.write_text("Cite the survey year and the source.", encoding="utf-8")  # read afresh, like the judge
    assert validator_identity(with_rules).version != before
    assert "require_verified_citations" in verdict_policy_settings(base)


def test_coherence_and_budget_settings_are_part_of_the_judge(make_settings: ScriptFactory) -> None:
    # Each decides what verdict an answer gets: an acceptance downgraded as incoherent, a verdict
    # that ran out of time. A replay under other thresholds is another judge.
    base = make_settings()
    changed = {
        "coherence_min_score": base.coherence_min_score + 0.1,
        "coherence_max_issues": base.coherence_max_issues + 1,
        "coherence_max_missing_requirements": base.coherence_max_missing_requirements + 1,
        "coherence_text_check": not base.coherence_text_check,
        "coherence_min_citations": base.coherence_min_citations + 1,
        "validator_budget_s": base.validator_budget_s + 1,
        "validator_budget_per_chunk_s": base.validator_budget_per_chunk_s + 1,
    }
    policy = verdict_policy_settings(base)
    versions = {validator_identity(base).version}
    for name, value in changed.items():
        assert policy[name] == getattr(base, name)
        versions.add(validator_identity(base.model_copy(update={name: value})).version)
    assert len(versions) == 1 + len(changed)


def test_a_template_override_renders_and_changes_only_its_digest() -> None:
    installed = template_digests()
    assert "validation.md.j2" in installed and "validation_system.md.j2" in installed
    templates = TemplateSet.of({"validation_rubric.md.j2": "RUBRIC-FROM-THE-WORKSPACE"}, "workspace@1")
    changed = template_digests(templates)
    assert {k for k in installed if installed[k] != changed[k]} == {"validation_rubric.md.j2"}
    with use_templates(templates):
        assert "RUBRIC-FROM-THE-WORKSPACE" in render_template("validation_system.md.j2", rubric=True)
    assert "RUBRIC-FROM-THE-WORKSPACE" not in render_template("validation_system.md.j2", rubric=True)


async def test_every_verdict_records_its_validator(store: Store, make_settings: ScriptFactory) -> None:
    settings = make_settings(script(accepted()))  # a coherent acceptance: it cites its evidence
    report, _, task_id, _ = await run_validation(store, settings, packet([FACT], ANSWER))
    assert report.result.status == ValidationStatus.ACCEPTED
    expected = validator_identity(settings).version
    assert report.debug["validator_version"] == expected
    (row,) = await store.list_validations(task_id)
    assert row.debug["validator_version"] == expected
    recorded = row.debug["validator"]
    assert recorded["model"] == "scripted/validator" and recorded["product_version"]
    assert set(recorded["templates"]) == set(template_digests())
    assert recorded["policy"] == verdict_policy_settings(settings)
    (event,) = await store.get_task_events(task_id, kinds=["task_validation_snapshotted"])
    assert event.payload["validator_version"] == expected


async def test_a_judges_cached_identity_follows_its_rules_and_templates(
    make_settings: ScriptFactory, tmp_path: Path
) -> None:
    # A judge builds its identity once and reuses it; a rules edit (even one of the same size,
    # in the same clock tick) or other templates must still give the new version at once.
    rules = tmp_path / "rules.md"
    rules.write_text("Cite the survey year.", encoding="utf-8")
    settings = make_settings().model_copy(update={"rules": rules})
    other = TemplateSet.of({"validation_rubric.md.j2": "Be strict."}, "workspace@1")
    cache = IdentityCache()
    first = await cache.record(settings, TemplateSet())
    assert first == validator_identity(settings).as_record()
    first["policy"]["rules_sha256"] = "changed by a caller"  # each caller gets its own copy
    assert (await cache.record(settings, TemplateSet())) == validator_identity(settings).as_record()
    rules.write_text("Cite the survey date.", encoding="utf-8")  # same size
    edited = await cache.record(settings, TemplateSet())
    assert edited == validator_identity(settings).as_record()
    assert (
        edited["validator_version"] != validator_identity(settings.model_copy(update={"rules": None})).version
    )
    assert edited["policy"]["rules_sha256"] != first["policy"]["rules_sha256"]
    assert (await cache.record(settings, other)) == validator_identity(settings, other).as_record()
    rules.unlink()
    gone = await cache.record(settings, other)
    assert (
        gone["policy"]["rules_sha256"]
        == "unreadable"
        == validator_identity(settings, other).policy["rules_sha256"]
    )


async def test_calibration_groups_and_filters_by_validator_version(store: Store) -> None:
    from core.calibration import CalibrationFilter, calibrate, calibration_csv, format_calibration
    from tests.core.test_calibration import seed

    async def decided(status: str, action: str, version: str | None) -> None:
        task_id = await seed(store, status, action)
        if version is not None:  # seed writes the verdict's debug; add the version to it
            await store.add_validation(
                task_id=task_id,
                attempt_id=(await store.list_attempts(task_id, resolve=False))[0].id,
                attempt_index=1,
                result={"status": status, "score": 0.5, "category": "none"},
                raw_response="{}",
                prompt=None,
                debug={"validator_model": "m1", "warnings": [], "validator_version": version},
            )

    await decided("accepted", "satisfied", "aaaa11112222")
    await decided("accepted", "revise", "aaaa11112222")
    await decided("rejected", "revise", "bbbb33334444")
    await decided("accepted", "satisfied", None)
    cal = await calibrate(store)
    assert {k: (v.n, v.agree) for k, v in cal.by_version.items()} == {
        "aaaa11112222": (2, 1),
        "bbbb33334444": (1, 1),
        "unversioned": (1, 1),
    }
    only = await calibrate(store, CalibrationFilter(validator_version="aaaa"))
    assert only.n == 2 and only.matrix["accepted"]["revised"] == 1
    assert "aaaa11112222: n=2" in format_calibration(cal)
    assert "version,bbbb33334444,n,1" in calibration_csv(cal)
    assert cal.as_json()["by_version"]["aaaa11112222"]["n"] == 2  # type: ignore[index]
