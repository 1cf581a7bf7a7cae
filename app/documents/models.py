"""Trusted documents an administrator registered: in trusted-documents-only mode, these (and `graphql/`) may run."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, created_at_column


class TrustedDocument(Base):
    __tablename__ = "trusted_documents"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)  # of the text exactly as clients send it
    body: Mapped[str] = mapped_column(Text)
    name: Mapped[str | None] = mapped_column(String(200))
    registered_at: Mapped[datetime] = created_at_column()
