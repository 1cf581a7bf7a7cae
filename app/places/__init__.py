"""Places: where outlets are (a source's country and kind), where articles are about, and what follows for feeds,
trending and full coverage."""
