"""Topics of an article: world, politics, business, technology, science, health, sports, entertainment."""
