// Starts yoga's GraphiQL (assets/graphiql/graphiql.js, loaded after this file) with the options the server
// put in the page. Monaco's workers are files served next to the bundle, so no blob: URL is needed.
'use strict';

self.MonacoEnvironment = {
  globalAPI: false,
  getWorkerUrl: function (moduleId, label) {
    var files = { editorWorkerService: 'editor.worker.js', json: 'json.worker.js', graphql: 'graphql.worker.js' };
    return '/assets/graphiql/' + (files[label] || files.editorWorkerService);
  },
};

document.addEventListener('DOMContentLoaded', function () {
  var options = JSON.parse(document.getElementById('graphiql-options').textContent);
  YogaGraphiQL.renderYogaGraphiQL(document.getElementById('root'), options);
});
