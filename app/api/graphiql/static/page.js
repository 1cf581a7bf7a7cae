// Starts GraphiQL on the page GET /graphql serves: the documents of graphql/ as ready tabs; queries and mutations
// over HTTP, subscriptions over graphql-transport-ws on the same host (the headers editor's values go in
// connection_init, so `{"Authorization": "Bearer ..."}` signs in both).
"use strict";
(function () {
  const url = location.origin + location.pathname;
  const tabs = JSON.parse(document.getElementById("newsagg-tabs").textContent);
  const fetcher = GraphiQL.createFetcher({ url, subscriptionUrl: url.replace(/^http/, "ws") });
  const root = ReactDOM.createRoot(document.getElementById("graphiql"));
  root.render(
    React.createElement(GraphiQL, {
      fetcher,
      defaultTabs: tabs,
      defaultEditorToolsVisibility: true,
      isHeadersEditorEnabled: true,
    }),
  );
})();
