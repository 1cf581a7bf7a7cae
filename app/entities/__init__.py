"""Named entities: the people, organisations and places an article names, as a signal for stories and trends."""
