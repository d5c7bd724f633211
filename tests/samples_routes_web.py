"""Node route layouts as the frameworks define them (path → contents), with the routes and
pages each must yield in `ROUTES_WEB` / `PAGES_WEB`.

EXPRESS_MVC is an excerpt of Express's own `examples/mvc` (github.com/expressjs/express at
a3714473), licensed MIT, "Copyright (c) 2009-2014 TJ Holowaychuk <tj@vision-media.ca>,
(c) 2013-2014 Roman Shtylman, (c) 2014-2015 Douglas Christopher Wilson" (LICENSE).
`lib/boot.js` and the controllers' exports are verbatim but for `require('express')` in place
of the in-repository `require('../../..')`; handler bodies and the error pages are cut.
The other layouts are written for these tests.
"""

_BOOT = """'use strict'

/**
 * Module dependencies.
 */

var express = require('express');
var fs = require('node:fs');
var path = require('node:path');

module.exports = function(parent, options){
  var dir = path.join(__dirname, '..', 'controllers');
  var verbose = options.verbose;
  fs.readdirSync(dir).forEach(function(name){
    var file = path.join(dir, name)
    if (!fs.statSync(file).isDirectory()) return;
    verbose && console.log('\\n   %s:', name);
    var obj = require(file);
    var name = obj.name || name;
    var prefix = obj.prefix || '';
    var app = express();
    var handler;
    var method;
    var url;

    // allow specifying the view engine
    if (obj.engine) app.set('view engine', obj.engine);
    app.set('views', path.join(__dirname, '..', 'controllers', name, 'views'));

    // generate routes based
    // on the exported methods
    for (var key in obj) {
      // "reserved" exports
      if (~['name', 'prefix', 'engine', 'before'].indexOf(key)) continue;
      // route exports
      switch (key) {
        case 'show':
          method = 'get';
          url = '/' + name + '/:' + name + '_id';
          break;
        case 'list':
          method = 'get';
          url = '/' + name + 's';
          break;
        case 'edit':
          method = 'get';
          url = '/' + name + '/:' + name + '_id/edit';
          break;
        case 'update':
          method = 'put';
          url = '/' + name + '/:' + name + '_id';
          break;
        case 'create':
          method = 'post';
          url = '/' + name;
          break;
        case 'index':
          method = 'get';
          url = '/';
          break;
        default:
          /* istanbul ignore next */
          throw new Error('unrecognized route: ' + name + '.' + key);
      }

      // setup
      handler = obj[key];
      url = prefix + url;

      // before middleware support
      if (obj.before) {
        app[method](url, obj.before, handler);
      } else {
        app[method](url, handler);
      }
    }

    // mount the app
    parent.use(app);
  });
};
"""

EXPRESS_MVC = {
    "package.json": '{"name": "mvc", "dependencies": {"express": "^4.21.0", "hbs": "^4.2.0",'
    ' "ejs": "^3.1.10", "express-session": "^1.18.0", "method-override": "^3.0.0"}}\n',
    "index.js": """'use strict'

var express = require('express');
var path = require('node:path');
var session = require('express-session');
var methodOverride = require('method-override');

var app = module.exports = express();
app.set('view engine', 'ejs');
app.set('views', path.join(__dirname, 'views'));
app.use(express.static(path.join(__dirname, 'public')));
app.use(express.urlencoded({ extended: true }))
app.use(methodOverride('_method'));

// load controllers
require('./lib/boot')(app, { verbose: !module.parent });

/* istanbul ignore next */
if (!module.parent) {
  app.listen(3000);
  console.log('Express started on port 3000');
}
""",
    "lib/boot.js": _BOOT,
    "db.js": "'use strict'\n\nvar pets = exports.pets = [];\nvar users = exports.users = [];\n",
    "controllers/main/index.js": """'use strict'

exports.index = function(req, res){
  res.redirect('/users');
};
""",
    "controllers/pet/index.js": """'use strict'

var db = require('../../db');

exports.engine = 'ejs';

exports.before = function(req, res, next){ next(); };

exports.show = function(req, res, next){
  res.render('show', { pet: req.pet });
};

exports.edit = function(req, res, next){
  res.render('edit', { pet: req.pet });
};

exports.update = function(req, res, next){
  res.redirect('/pet/' + req.pet.id);
};
""",
    "controllers/user-pet/index.js": """'use strict'

var db = require('../../db');

exports.name = 'pet';
exports.prefix = '/user/:user_id';

exports.create = function(req, res, next){
  res.redirect('/user/' + req.params.user_id);
};
""",
    "controllers/user/index.js": """'use strict'

var db = require('../../db');

exports.engine = 'hbs';

exports.before = function(req, res, next){ next(); };

exports.list = function(req, res, next){
  res.render('list', { users: db.users });
};

exports.edit = function(req, res, next){
  res.render('edit', { user: req.user });
};

exports.show = function(req, res, next){
  res.render('show', { user: req.user });
};

exports.update = function(req, res, next){
  res.redirect('/user/' + req.user.id);
};
""",
    "controllers/user/views/list.hbs": "<h1>Users</h1>\n",
}

# ESM: a router exported by name and mounted by its import name, a router mounted through a
# variable, a router mounted inside another router.
EXPRESS_ROUTERS = {
    "package.json": '{"type": "module", "dependencies": {"express": "^4.21.0"}}\n',
    "src/server.js": """import express from 'express';
import { accountRouter } from './routes/account.js';
import adminRoutes from './routes/admin.js';

const app = express();
const api = express.Router();
api.get('/ping', (req, res) => res.json({ pong: true }));
api.use('/account', accountRouter);
app.use('/api', api);
app.use('/admin', adminRoutes);
app.listen(3000);
""",
    "src/routes/account.js": """import { Router } from 'express';

export const accountRouter = Router();
accountRouter.get('/', (req, res) => res.json({}));
accountRouter.patch('/:accountId', (req, res) => res.json({}));
""",
    "src/routes/admin.js": """import express from 'express';

const router = express.Router();
router.get('/', (req, res) => res.send('<h1>Admin</h1>'));
router.post('/flags/:flag', (req, res) => res.sendStatus(204));
export default router;
""",
}

NEXT_DOCS = {
    "package.json": '{"dependencies": {"next": "14.2.3", "react": "18.3.1"}}\n',
    "next.config.js": "module.exports = { pageExtensions: ['tsx', 'mdx'] };\n",
    "pages/_app.tsx": "export default function App({ Component, pageProps }) { return <Component {...pageProps} />; }\n",
    "pages/_document.tsx": "export default function Document() { return null; }\n",
    "pages/index.tsx": "export default function Home() { return <h1>Acme SDK</h1>; }\n",
    "pages/docs/index.tsx": "export default function Docs() { return <h1>Documentation</h1>; }\n",
    "pages/docs/getting-started.mdx": "# Getting started\n\nInstall the SDK.\n",
    "pages/docs/[...slug].tsx": "export default function Doc() { return <article />; }\n",
    "pages/api/search.ts": "export default function handler(req, res) { res.json([]); }\n",
    "app/(marketing)/pricing/page.tsx": "export default function P() { return <h1>Pricing</h1>; }\n",
    "app/blog/[slug]/page.tsx": "export default function B() { return <article />; }\n",
    "app/guides/docs/[[...path]]/page.tsx": "export default function G() { return <main />; }\n",
    "docs/CONTRIBUTING.md": "# Contributing\n",
    "docs/architecture.tsx": "export const diagram = null;\n",
}

REACT_ROUTES = {
    "package.json": '{"dependencies": {"react": "^18.3.1", "react-router-dom": "^6.23.1"}}\n',
    "src/main.jsx": """import { createBrowserRouter, RouterProvider } from 'react-router-dom';
import Root from './routes/root';
import Contact from './routes/contact';

const router = createBrowserRouter([
  {
    path: '/',
    element: <Root />,
    children: [
      { index: true, element: <Contact /> },
      {
        element: <Contact />,
        children: [
          { path: 'contacts/:contactId', element: <Contact /> },
          { path: 'contacts/:contactId/edit', element: <Contact /> },
        ],
      },
    ],
  },
]);
export default router;
""",
    "src/routes/root.jsx": """import { Routes, Route } from 'react-router-dom';

export default function Root() {
  return (
    <Routes>
      <Route path="teams" element={<Root />}>
        <Route path=":teamId" element={<Root />}>
          <Route path="members" element={<Root />} />
        </Route>
        <Route path="new" element={<Root />} />
      </Route>
    </Routes>
  );
}
""",
    "src/routes/contact.jsx": "export default function Contact() { return <h1>Contact</h1>; }\n",
}

VUE_ROUTER = {
    "package.json": '{"dependencies": {"vue": "^3.4.0", "vue-router": "^4.3.0"}}\n',
    "src/router/index.js": """import { createRouter, createWebHistory } from 'vue-router';
import HomeView from '../views/HomeView.vue';

const routes = [
  { path: '/', name: 'home', component: HomeView },
  { path: '/about', name: 'about', component: () => import('../views/AboutView.vue') },
  {
    path: '/user/:id',
    component: () => import('../views/UserView.vue'),
    children: [
      { path: '', component: HomeView },
      { path: 'profile', component: HomeView },
      { path: 'posts', component: HomeView },
    ],
  },
  { path: '/:pathMatch(.*)*', name: 'NotFound', component: HomeView },
];

export default createRouter({ history: createWebHistory(), routes });
""",
    "src/views/HomeView.vue": "<template><h1>Home</h1></template>\n",
    "src/views/AboutView.vue": "<template><h1>About us</h1></template>\n",
    "src/views/UserView.vue": "<template><router-view /></template>\n",
}

ROUTES_WEB = {
    "express_mvc": {
        ("GET", "/"),
        ("GET", "/users"),
        ("GET", "/user/{user_id}"),
        ("GET", "/user/{user_id}/edit"),
        ("PUT", "/user/{user_id}"),
        ("GET", "/pet/{pet_id}"),
        ("GET", "/pet/{pet_id}/edit"),
        ("PUT", "/pet/{pet_id}"),
        ("POST", "/user/{user_id}/pet"),
    },
    "express_routers": {
        ("GET", "/api/ping"),
        ("GET", "/api/account"),
        ("PATCH", "/api/account/{accountId}"),
        ("GET", "/admin"),
        ("POST", "/admin/flags/{flag}"),
    },
    "next_docs": {("GET", "/api/search")},
    "react_routes": set(),
    "vue_router": set(),
}

PAGES_WEB = {
    "express_mvc": set(),
    "express_routers": set(),
    "next_docs": {
        "/",
        "/docs",
        "/docs/getting-started",
        "/docs/{slug}",
        "/pricing",
        "/blog/{slug}",
        "/guides/docs/{path}",
    },
    "react_routes": {
        "/",
        "/contacts/{contactId}",
        "/contacts/{contactId}/edit",
        "/teams",
        "/teams/{teamId}",
        "/teams/{teamId}/members",
        "/teams/new",
    },
    "vue_router": {"/", "/about", "/user/{id}", "/user/{id}/profile", "/user/{id}/posts"},
}

LAYOUTS_WEB = {
    "express_mvc": EXPRESS_MVC,
    "express_routers": EXPRESS_ROUTERS,
    "next_docs": NEXT_DOCS,
    "react_routes": REACT_ROUTES,
    "vue_router": VUE_ROUTER,
}
