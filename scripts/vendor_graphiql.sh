#!/usr/bin/env bash
# Copies GraphiQL's browser files into the package data (app/api/graphiql/static/vendor), so the API serves the page
# offline: the versions are the ones scripts/graphiql/package-lock.json pins (with their checksums), fetched by npm.
# Run it after changing a version there (`npm install --package-lock-only` updates the lock), then commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."
assets=scripts/graphiql
vendor=app/api/graphiql/static/vendor

npm ci --prefix "$assets" --no-audit --no-fund --silent
modules="$assets/node_modules"
rm -rf "$vendor" && mkdir -p "$vendor"
cp "$modules/react/umd/react.production.min.js" "$modules/react-dom/umd/react-dom.production.min.js" \
   "$modules/graphiql/graphiql.min.js" "$modules/graphiql/graphiql.min.css" "$vendor/"
sed -i '/^\/\/# sourceMappingURL=/d' "$vendor"/*.js  # the maps are not shipped

# The GraphiQL bundle carries its whole dependency tree, React the rest: every package's licence goes beside them.
{
  echo "The files in this folder are copied unchanged (less source-map comments) from these npm packages; the"
  echo "GraphiQL bundle includes its dependencies. Each package's licence follows the list."
  echo
  (cd "$assets" && npm query '*') | node -e '
    const fs = require("fs"), path = require("path");
    const packages = JSON.parse(fs.readFileSync(0)).filter((p) => p.location && p.location.startsWith("node_modules/"));
    const seen = new Map(packages.map((p) => [`${p.name}@${p.version}`, p]));
    const sorted = [...seen.values()].sort((a, b) => a.name.localeCompare(b.name));
    for (const p of sorted) console.log(`${p.name}@${p.version}  ${p.license}`);
    for (const p of sorted) {
      const dir = path.join(process.argv[1], p.location);
      const file = fs.readdirSync(dir).find((f) => /^(licen[cs]e|copying)/i.test(f));
      console.log(`\n==== ${p.name}@${p.version} (${p.license})\n`);
      console.log(file ? fs.readFileSync(path.join(dir, file), "utf8").trim() : `(no licence file; package.json says ${p.license})`);
    }' "$assets"
} > "$vendor/LICENSES.txt"
ls -l "$vendor"
