"""A softmax regression over hashed TF-IDF words: trained with numpy alone, stored as hashed ids and weights."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from app.topics.features import DIMENSION, featurize

FEATURES = 2  # 1: hashed words; 2: hashed English stems. A model is read only by the features it was trained on


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(1, keepdims=True)
    e = np.exp(z)
    return np.asarray(e / e.sum(1, keepdims=True))


def _scores(rows: np.ndarray, values: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """Sparse rows times a dense (features x classes) matrix: `values` are already multiplied into `weights`."""
    return np.stack([np.bincount(rows, weights=weights[:, c] * values, minlength=size)
                     for c in range(weights.shape[1])], 1)  # fmt: skip


class TopicModel:
    def __init__(self, topics: tuple[str, ...], columns: np.ndarray, weights: np.ndarray, bias: np.ndarray,
                 idf: np.ndarray) -> None:  # fmt: skip
        self.topics, self.columns, self.weights, self.bias, self.idf = topics, columns, weights, bias, idf
        # hashed column -> row of `weights`, the last row (zeros) for words the model does not know
        self._row = np.full(DIMENSION, len(columns), np.int32)
        self._row[columns] = np.arange(len(columns), dtype=np.int32)
        self._weights = np.vstack([weights.astype(np.float32), np.zeros((1, len(topics)), np.float32)])
        self._idf = np.append(idf.astype(np.float32), np.float32(0.0))

    def probabilities(self, docs: list[tuple[str, str]]) -> np.ndarray:
        batch = featurize(docs)
        row = self._row[batch.columns]
        values = (1.0 + np.log(batch.counts)) * self._idf[row]  # sublinear tf x idf, then L2 per document
        norms = np.sqrt(np.bincount(batch.rows, weights=values * values, minlength=batch.size))
        norms[norms == 0] = 1.0
        scores = _scores(batch.rows, values / norms[batch.rows], self._weights[row], batch.size)
        return _softmax(scores + self.bias)

    @classmethod
    def train(cls, docs: list[tuple[str, str]], labels: list[str], topics: tuple[str, ...], *, l2: float = 1e-5,
              epochs: int = 100, rate: float = 0.1) -> TopicModel:  # fmt: skip
        """Full-batch Adam on the cross-entropy, classes balanced; deterministic."""
        batch = featurize(docs)
        frequencies = np.bincount(batch.columns, minlength=DIMENSION)
        idf_all = np.log((1 + batch.size) / (1 + frequencies)) + 1.0
        values = (1.0 + np.log(batch.counts)) * idf_all[batch.columns]
        norms = np.sqrt(np.bincount(batch.rows, weights=values * values, minlength=batch.size))
        norms[norms == 0] = 1.0
        values = values / norms[batch.rows]
        used, column_index = np.unique(batch.columns, return_inverse=True)
        y = np.array([topics.index(label) for label in labels])
        targets = np.zeros((batch.size, len(topics)))
        targets[np.arange(batch.size), y] = 1
        sample = (batch.size / (len(topics) * np.maximum(np.bincount(y, minlength=len(topics)), 1)))[y]
        sample /= sample.sum()
        weights, bias = np.zeros((len(used), len(topics))), np.zeros(len(topics))
        m_w, v_w, m_b, v_b = np.zeros_like(weights), np.zeros_like(weights), np.zeros_like(bias), np.zeros_like(bias)
        for epoch in range(1, epochs + 1):
            error = _softmax(_scores(batch.rows, values, weights[column_index], batch.size) + bias) - targets
            error *= sample[:, None]
            per_value = error[batch.rows] * values[:, None]
            g_w = np.stack([np.bincount(column_index, weights=per_value[:, c], minlength=len(used))
                            for c in range(len(topics))], 1) + l2 * weights  # fmt: skip
            g_b = error.sum(0)
            m_w, v_w = 0.9 * m_w + 0.1 * g_w, 0.999 * v_w + 0.001 * g_w * g_w
            m_b, v_b = 0.9 * m_b + 0.1 * g_b, 0.999 * v_b + 0.001 * g_b * g_b
            step = rate * np.sqrt(1 - 0.999**epoch) / (1 - 0.9**epoch)
            weights -= step * m_w / (np.sqrt(v_w) + 1e-8)
            bias -= step * m_b / (np.sqrt(v_b) + 1e-8)
        return cls(topics, used, weights, bias, idf_all[used])

    def pruned(self, keep: int) -> TopicModel:
        """The `keep` words with the largest weight for any topic: a smaller file, the same answers in practice."""
        if keep >= len(self.columns):
            return self
        top = np.sort(np.argsort(-np.abs(self.weights).max(1))[:keep])
        return TopicModel(self.topics, self.columns[top], self.weights[top], self.bias, self.idf[top])

    def save(self, path: Path) -> None:
        meta = {"topics": list(self.topics), "dimension": DIMENSION, "hash": "mmh3-32 seed 17", "version": FEATURES}
        with path.open("wb") as handle:
            np.savez_compressed(handle, columns=self.columns.astype(np.int32), weights=self.weights.astype(np.float16),
                                bias=self.bias.astype(np.float32), idf=self.idf.astype(np.float16),
                                meta=np.array(json.dumps(meta)))  # fmt: skip

    @classmethod
    def load(cls, path: Path) -> TopicModel:
        with np.load(path, allow_pickle=False) as stored:
            meta = json.loads(str(stored["meta"]))
            if (meta.get("dimension"), meta.get("version")) != (DIMENSION, FEATURES):
                raise ValueError(
                    f"{path}: a model for features {meta.get('version')} in {meta.get('dimension')} "
                    f"dimensions, not {FEATURES} in {DIMENSION}: train it again (newsagg topics train)"
                )
            return cls(tuple(meta["topics"]), stored["columns"].astype(np.int64),
                       stored["weights"].astype(np.float32), stored["bias"].astype(np.float32),
                       stored["idf"].astype(np.float32))  # fmt: skip
