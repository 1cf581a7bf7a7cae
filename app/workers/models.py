"""The workers table: one row per running worker process, its heartbeat renewed every few seconds."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String, func
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class Worker(Base):
    """In PostgreSQL, beside the claims it vouches for: a flushed or restarted Redis makes no live worker look dead."""

    __tablename__ = "workers"

    id: Mapped[str] = mapped_column(String(100), primary_key=True)  # host:pid:random, as its logs name it
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(server_default=func.now())
    heartbeat_at: Mapped[datetime] = mapped_column(server_default=func.now())  # the database's clock, not the host's
