// Starts Swagger UI (swagger-ui-bundle.js, loaded before this file) on the API's OpenAPI document.
'use strict';

var element = document.getElementById('api-reference');
window.ui = SwaggerUIBundle({
  url: element.getAttribute('data-openapi-url'),
  dom_id: '#api-reference',
  deepLinking: true,
  persistAuthorization: true,
  // OpenAPI has no scheme for `Authorization: Token <token>`: the document offers an API key in the
  // Authorization header, and a person pastes the token alone. A value without a scheme gets `Token `.
  requestInterceptor: function (request) {
    var value = request.headers && request.headers.Authorization;
    if (typeof value === 'string' && value.trim() !== '' && !/\s/.test(value.trim())) {
      request.headers.Authorization = 'Token ' + value.trim();
    }
    return request;
  },
});
