"""`doctor [--model M]`: one line per check of this machine (and model) with ok / warning / error and what
to do; exit status 1 when any check is an error. Never loads weights."""

from __future__ import annotations

import click


@click.command(name="doctor")
@click.option("--model", envvar="WTB_MODEL", help="Also check this model: cache, chat template, parser, fit.")
def doctor(model: str | None) -> None:
    """Check Python, packages, GPUs, backends, the release file and (with --model) a model."""
    from wtb_local.engines.doctor import ERROR, run_checks  # deferred: start-up (--help)

    checks = run_checks(model)
    for check in checks:
        click.echo(check.line())
    errors = sum(check.status == ERROR for check in checks)
    if errors:
        raise click.ClickException(f"{errors} check(s) failed; see the lines marked error")
