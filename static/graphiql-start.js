// Starts yoga's GraphiQL (assets/graphiql/graphiql.js, loaded after this file) with the options the server
// put in the page. Monaco's workers are files served next to the bundle, so no blob: URL is needed.
// GraphiQL keeps its tabs, query and headers in this tab's sessionStorage, never in localStorage: an
// Authorization header pasted on a shared machine is gone when the tab closes.
'use strict';

self.MonacoEnvironment = {
  globalAPI: false,
  getWorkerUrl: function (moduleId, label) {
    var files = { editorWorkerService: 'editor.worker.js', json: 'json.worker.js', graphql: 'graphql.worker.js' };
    return '/assets/graphiql/' + (files[label] || files.editorWorkerService);
  },
};

/** GraphiQL's storage: its own keys in sessionStorage, so that clearing it leaves the console's keys alone. */
function tabStorage() {
  var prefix = 'graphiql:';
  function ownKeys() {
    var keys = [];
    for (var i = 0; i < sessionStorage.length; i++) {
      var key = sessionStorage.key(i);
      if (key !== null && key.indexOf(prefix) === 0) keys.push(key);
    }
    return keys;
  }
  return {
    getItem: function (key) {
      return sessionStorage.getItem(key);
    },
    setItem: function (key, value) {
      sessionStorage.setItem(key, value);
    },
    removeItem: function (key) {
      sessionStorage.removeItem(key);
    },
    get length() {
      return ownKeys().length;
    },
    clear: function () {
      ownKeys().forEach(function (key) {
        sessionStorage.removeItem(key);
      });
    },
  };
}

document.addEventListener('DOMContentLoaded', function () {
  var options = JSON.parse(document.getElementById('graphiql-options').textContent);
  options.storage = tabStorage();
  YogaGraphiQL.renderYogaGraphiQL(document.getElementById('root'), options);
});
