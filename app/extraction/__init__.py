"""Article text: the page of an article fetched and its main text extracted (or a feed's full text taken as is)."""
