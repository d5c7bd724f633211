"""Files of the two demo repositories: a small web app (Express API + React pages) and a
small Expo mobile app. Also used by the tests as realistic sample repositories."""

DEMO_WEB = {
    "README.md": "# Acme Tasks (AMTP demo)\n"
    "\n"
    "A tiny task tracker: an Express API under `/api` and a React front end.\n"
    "\n"
    "    npm install && npm run build && npm start   # serves everything on "
    "http://localhost:3000\n",
    "index.html": "<!doctype html><html><head><title>Acme Tasks</title></head><body><div "
    'id="root"></div><script type="module" '
    'src="/src/main.jsx"></script></body></html>\n',
    "package.json": "{\n"
    '  "name": "acme-tasks",\n'
    '  "private": true,\n'
    '  "scripts": {"dev": "vite", "build": "vite build", "start": "node '
    'server/index.js"},\n'
    '  "dependencies": {\n'
    '    "express": "^4.19.2",\n'
    '    "react": "^18.3.1",\n'
    '    "react-dom": "^18.3.1",\n'
    '    "react-router-dom": "^6.23.1"\n'
    "  },\n"
    '  "devDependencies": {"vite": "^5.2.11", "@vitejs/plugin-react": "^4.3.0"}\n'
    "}\n",
    "server/index.js": "const path = require('path');\n"
    "const express = require('express');\n"
    "const tasks = require('./routes/tasks');\n"
    "\n"
    "const app = express();\n"
    "app.use(express.json());\n"
    "app.get('/api/health', (req, res) => res.json({ ok: true }));\n"
    "app.use('/api/tasks', tasks);\n"
    "app.use(express.static(path.join(__dirname, '..', 'dist')));\n"
    "app.get('*', (req, res) => res.sendFile(path.join(__dirname, '..', 'dist', "
    "'index.html')));\n"
    "\n"
    "app.listen(process.env.PORT || 3000);\n",
    "server/routes/tasks.js": "const express = require('express');\n"
    "const router = express.Router();\n"
    "let tasks = [{ id: 1, title: 'Write tests', done: false }];\n"
    "\n"
    "router.get('/', (req, res) => res.json(tasks));\n"
    "router.get('/:taskId', (req, res) => {\n"
    "  const task = tasks.find((t) => t.id === Number(req.params.taskId));\n"
    "  if (!task) return res.status(404).json({ error: 'task not found' "
    "});\n"
    "  res.json(task);\n"
    "});\n"
    "router.post('/', (req, res) => {\n"
    "  if (typeof req.body.title !== 'string') return "
    "res.status(400).json({ error: 'title required' });\n"
    "  const task = { id: Date.now(), title: req.body.title, done: false "
    "};\n"
    "  tasks.push(task);\n"
    "  res.status(201).json(task);\n"
    "});\n"
    "router.patch('/:taskId', (req, res) => {\n"
    "  const task = tasks.find((t) => t.id === Number(req.params.taskId));\n"
    "  if (!task) return res.status(404).json({ error: 'task not found' "
    "});\n"
    "  Object.assign(task, req.body);\n"
    "  res.json(task);\n"
    "});\n"
    "router.delete('/:taskId', (req, res) => {\n"
    "  tasks = tasks.filter((t) => t.id !== Number(req.params.taskId));\n"
    "  res.status(204).end();\n"
    "});\n"
    "\n"
    "module.exports = router;\n",
    "src/App.jsx": "import { Routes, Route } from 'react-router-dom';\n"
    "import Home from './pages/Home';\n"
    "import TaskList from './pages/TaskList';\n"
    "import TaskDetail from './pages/TaskDetail';\n"
    "import About from './pages/About';\n"
    "\n"
    "export default function App() {\n"
    "  return (\n"
    "    <Routes>\n"
    '      <Route path="/" element={<Home />} />\n'
    '      <Route path="/tasks" element={<TaskList />} />\n'
    '      <Route path="/tasks/:taskId" element={<TaskDetail />} />\n'
    '      <Route path="/about" element={<About />} />\n'
    "    </Routes>\n"
    "  );\n"
    "}\n",
    "src/main.jsx": "import React from 'react';\n"
    "import ReactDOM from 'react-dom/client';\n"
    "import { BrowserRouter } from 'react-router-dom';\n"
    "import App from './App';\n"
    "\n"
    "ReactDOM.createRoot(document.getElementById('root')).render(<BrowserRouter><App "
    "/></BrowserRouter>);\n",
    "src/pages/About.jsx": "export default function About() { return <h1>About Acme Tasks</h1>; }\n",
    "src/pages/Home.jsx": "export default function Home() { return <h1>Acme Tasks</h1>; }\n",
    "src/pages/TaskDetail.jsx": "export default function TaskDetail() { return <h1>Task</h1>; }\n",
    "src/pages/TaskList.jsx": "export default function TaskList() { return <h1>All tasks</h1>; }\n",
}

DEMO_MOBILE = {
    "README.md": "# Acme Habits (AMTP demo)\n"
    "\n"
    "A small Expo habit tracker built with expo-router.\n"
    "\n"
    "    npm install && npx expo run:android   # or run:ios\n",
    "app.json": "{\n"
    '  "expo": {\n'
    '    "name": "Acme Habits",\n'
    '    "slug": "acme-habits",\n'
    '    "scheme": "acmehabits",\n'
    '    "ios": {"bundleIdentifier": "com.acme.habits"},\n'
    '    "android": {"package": "com.acme.habits"}\n'
    "  }\n"
    "}\n",
    "app/(tabs)/_layout.tsx": "import { Tabs } from 'expo-router';\n"
    "\n"
    "export default function TabLayout() {\n"
    "  return (\n"
    "    <Tabs>\n"
    "      <Tabs.Screen name=\"index\" options={{ title: 'Today' }} />\n"
    "      <Tabs.Screen name=\"stats\" options={{ title: 'Stats' }} />\n"
    "      <Tabs.Screen name=\"settings\" options={{ title: 'Settings' }} "
    "/>\n"
    "    </Tabs>\n"
    "  );\n"
    "}\n",
    "app/(tabs)/index.tsx": "import { FlatList, Text, View } from 'react-native';\n"
    "import { HABITS } from '../../lib/habits';\n"
    "\n"
    "export default function Today() {\n"
    "  return (\n"
    "    <View>\n"
    "      <Text>Today's habits</Text>\n"
    "      <FlatList data={HABITS} renderItem={({ item }) => "
    "<Text>{item.name}</Text>} />\n"
    "    </View>\n"
    "  );\n"
    "}\n",
    "app/(tabs)/settings.tsx": "import { Text } from 'react-native';\n"
    "export default function Settings() { return <Text>Reminders</Text>; "
    "}\n",
    "app/(tabs)/stats.tsx": "import { Text } from 'react-native';\n"
    "export default function Stats() { return <Text>Your streaks</Text>; }\n",
    "app/_layout.tsx": "import { Stack } from 'expo-router';\n"
    "\n"
    "export default function RootLayout() {\n"
    "  return <Stack screenOptions={{ headerShown: false }} />;\n"
    "}\n",
    "app/habit/[id].tsx": "import { useLocalSearchParams } from 'expo-router';\n"
    "import { Text } from 'react-native';\n"
    "\n"
    "export default function Habit() {\n"
    "  const { id } = useLocalSearchParams();\n"
    "  return <Text>Habit {id}</Text>;\n"
    "}\n",
    "lib/habits.ts": "export const HABITS = [{ id: '1', name: 'Drink water' }, { id: '2', name: "
    "'Read' }];\n",
    "package.json": "{\n"
    '  "name": "acme-habits",\n'
    '  "main": "expo-router/entry",\n'
    '  "scripts": {"start": "expo start", "android": "expo run:android", "ios": "expo '
    'run:ios"},\n'
    '  "dependencies": {\n'
    '    "expo": "~51.0.8",\n'
    '    "expo-router": "~3.5.14",\n'
    '    "react": "18.2.0",\n'
    '    "react-native": "0.74.1"\n'
    "  }\n"
    "}\n",
}
