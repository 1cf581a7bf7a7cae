"""Ids of refresh jobs: each names its source and the claim it was enqueued for, so the sweeper can tell a claim whose
job is still queued or running from one whose job was lost (with Redis, or never enqueued)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

PREFIX = "refresh:"
ANY_CLAIM = "-"  # an administrator's refresh: its job runs whatever claim it finds


def refresh_job_id(source_id: int, claimed_at: datetime) -> str:
    """The first job of a claim: enqueued twice for one claim, it runs once."""
    return f"{PREFIX}{source_id}:{claimed_at.isoformat()}"


def follow_up_job_id(source_id: int, claimed_at: datetime | None) -> str:
    """A later job of the same claim (a retry, a politeness deferral, an administrator's refresh): unique."""
    claim = claimed_at.isoformat() if claimed_at is not None else ANY_CLAIM
    return f"{PREFIX}{source_id}:{claim}/{uuid.uuid4().hex}"


@dataclass(frozen=True, slots=True)
class JobClaim:
    source_id: int
    claimed_at: datetime | None  # None: any claim of the source


def claim_of(job_id: str) -> JobClaim | None:
    """The claim a refresh job id names; None for other jobs and ids this module did not make."""
    if not job_id.startswith(PREFIX):
        return None
    source, _, claim = job_id[len(PREFIX) :].partition(":")
    claim = claim.partition("/")[0]
    if not source.isdigit() or not claim:
        return None
    if claim == ANY_CLAIM:
        return JobClaim(int(source), None)
    try:
        return JobClaim(int(source), datetime.fromisoformat(claim))
    except ValueError:
        return None
