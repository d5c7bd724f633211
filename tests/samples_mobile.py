"""Sample mobile repositories (path → contents): Expo (expo-router), Android, iOS (SwiftUI)."""

EXPO = {
    "README.md": "# Acme Shop\n\nExpo app with expo-router. `npx expo start`.\n",
    "package.json": """{
  "name": "acme-shop",
  "main": "expo-router/entry",
  "dependencies": {
    "expo": "~51.0.8",
    "expo-router": "~3.5.14",
    "react": "18.2.0",
    "react-native": "0.74.1"
  }
}
""",
    "app.json": """{
  "expo": {
    "name": "Acme Shop",
    "slug": "acme-shop",
    "scheme": "acmeshop",
    "ios": {"bundleIdentifier": "com.acme.shop"},
    "android": {"package": "com.acme.shop"}
  }
}
""",
    "babel.config.js": "module.exports = (api) => { api.cache(true); return { presets: ['babel-preset-expo'] }; };\n",
    "tsconfig.json": '{"extends": "expo/tsconfig.base"}\n',
    "app/_layout.tsx": """import { Stack } from 'expo-router';

export default function RootLayout() {
  return (
    <Stack>
      <Stack.Screen name="(tabs)" options={{ headerShown: false }} />
      <Stack.Screen name="settings" options={{ title: 'Settings' }} />
    </Stack>
  );
}
""",
    "app/(tabs)/_layout.tsx": """import { Tabs } from 'expo-router';

export default function TabLayout() {
  return (
    <Tabs>
      <Tabs.Screen name="index" options={{ title: 'Shop' }} />
      <Tabs.Screen name="cart" options={{ title: 'Cart' }} />
      <Tabs.Screen name="profile" options={{ title: 'Profile' }} />
    </Tabs>
  );
}
""",
    "app/(tabs)/index.tsx": """import { Text, View } from 'react-native';

export default function ShopScreen() {
  return <View><Text>Featured products</Text></View>;
}
""",
    "app/(tabs)/cart.tsx": "import { Text } from 'react-native';\nexport default function Cart() { return <Text>Your cart is empty</Text>; }\n",
    "app/(tabs)/profile.tsx": "import { Text } from 'react-native';\nexport default function Profile() { return <Text>Profile</Text>; }\n",
    "app/product/[id].tsx": """import { useLocalSearchParams } from 'expo-router';
import { Text } from 'react-native';

export default function Product() {
  const { id } = useLocalSearchParams();
  return <Text>Product {id}</Text>;
}
""",
    "app/settings.tsx": "import { Text } from 'react-native';\nexport default function Settings() { return <Text>Notifications</Text>; }\n",
    "app/+not-found.tsx": "import { Text } from 'react-native';\nexport default function NotFound() { return <Text>Not found</Text>; }\n",
    "components/ProductCard.tsx": "import { Text } from 'react-native';\nexport function ProductCard() { return <Text>card</Text>; }\n",
}

ANDROID = {
    "README.md": "# Acme Notes (Android)\n\nKotlin + Jetpack Compose. `./gradlew installDebug`.\n",
    "settings.gradle.kts": 'rootProject.name = "AcmeNotes"\ninclude(":app")\n',
    "build.gradle.kts": 'plugins { id("com.android.application") version "8.4.1" apply false }\n',
    "gradle.properties": "android.useAndroidX=true\n",
    "app/build.gradle.kts": """plugins {
    id("com.android.application")
    id("org.jetbrains.kotlin.android")
}

android {
    namespace = "com.acme.notes"
    compileSdk = 34
    defaultConfig {
        applicationId = "com.acme.notes"
        minSdk = 26
        targetSdk = 34
    }
    buildFeatures { compose = true }
}
""",
    "app/src/main/AndroidManifest.xml": """<?xml version="1.0" encoding="utf-8"?>
<manifest xmlns:android="http://schemas.android.com/apk/res/android">
    <application android:label="@string/app_name">
        <activity android:name=".MainActivity" android:exported="true">
            <intent-filter>
                <action android:name="android.intent.action.MAIN" />
                <category android:name="android.intent.category.LAUNCHER" />
            </intent-filter>
        </activity>
        <activity android:name=".NoteDetailActivity" android:exported="true"
            android:label="@string/title_note">
            <intent-filter>
                <action android:name="android.intent.action.VIEW" />
                <category android:name="android.intent.category.DEFAULT" />
                <category android:name="android.intent.category.BROWSABLE" />
                <data android:scheme="acmenotes" android:host="note" />
            </intent-filter>
        </activity>
        <activity android:name=".settings.SettingsActivity" android:exported="false"
            android:label="@string/title_settings" />
    </application>
</manifest>
""",
    "app/src/main/res/values/strings.xml": """<resources>
    <string name="app_name">Acme Notes</string>
    <string name="title_note">Note</string>
    <string name="title_settings">Settings</string>
</resources>
""",
    "app/src/main/java/com/acme/notes/MainActivity.kt": """package com.acme.notes

import android.os.Bundle
import androidx.activity.ComponentActivity
import androidx.activity.compose.setContent
import androidx.compose.material3.Text
import androidx.navigation.compose.NavHost
import androidx.navigation.compose.composable
import androidx.navigation.compose.rememberNavController

class MainActivity : ComponentActivity() {
    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        setContent {
            val nav = rememberNavController()
            NavHost(nav, startDestination = "notes") {
                composable("notes") { Text("My notes") }
                composable("archive") { Text("Archive") }
            }
        }
    }
}
""",
    "app/src/main/java/com/acme/notes/NoteDetailActivity.kt": """package com.acme.notes

import androidx.activity.ComponentActivity

class NoteDetailActivity : ComponentActivity()
""",
    "app/src/main/java/com/acme/notes/settings/SettingsActivity.java": """package com.acme.notes.settings;

import android.app.Activity;

public class SettingsActivity extends Activity {}
""",
    "app/src/test/java/com/acme/notes/NotesTest.kt": "class NotesTest\n",
}

IOS = {
    "README.md": "# Acme Todo (iOS)\n\nSwiftUI app. Open AcmeTodo.xcodeproj in Xcode 15.\n",
    "AcmeTodo.xcodeproj/project.pbxproj": """// !$*UTF8*$!
{
    objects = {
        A1 /* Debug */ = {
            buildSettings = {
                PRODUCT_BUNDLE_IDENTIFIER = com.acme.todo;
                PRODUCT_NAME = "$(TARGET_NAME)";
            };
        };
        A2 /* Debug */ = {
            buildSettings = {
                PRODUCT_BUNDLE_IDENTIFIER = com.acme.todoTests;
            };
        };
    };
}
""",
    "AcmeTodo/Info.plist": """<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0">
<dict>
    <key>CFBundleIdentifier</key>
    <string>$(PRODUCT_BUNDLE_IDENTIFIER)</string>
    <key>CFBundleURLTypes</key>
    <array><dict><key>CFBundleURLSchemes</key><array><string>acmetodo</string></array></dict></array>
</dict>
</plist>
""",
    "AcmeTodo/AcmeTodoApp.swift": """import SwiftUI

@main
struct AcmeTodoApp: App {
    var body: some Scene {
        WindowGroup {
            ContentView()
        }
    }
}
""",
    "AcmeTodo/ContentView.swift": """import SwiftUI

struct ContentView: View {
    var body: some View {
        TabView {
            TodoListView()
                .tabItem { Label("Todos", systemImage: "checklist") }
            SettingsView()
                .tabItem { Label("Settings", systemImage: "gear") }
        }
    }
}
""",
    "AcmeTodo/TodoListView.swift": """import SwiftUI

struct TodoListView: View {
    @State private var todos = ["Buy milk"]
    var body: some View {
        NavigationStack {
            List(todos, id: \\.self) { todo in
                NavigationLink(destination: TodoDetailView(title: todo)) { TodoRowView(title: todo) }
            }
            .navigationTitle("Todos")
        }
    }
}
""",
    "AcmeTodo/TodoDetailView.swift": """import SwiftUI

struct TodoDetailView: View {
    let title: String
    var body: some View {
        Text(title).navigationTitle("Details")
    }
}
""",
    "AcmeTodo/SettingsView.swift": """import SwiftUI

struct SettingsView: View {
    var body: some View {
        Form { Toggle("Reminders", isOn: .constant(true)) }.navigationTitle("Settings")
    }
}
""",
    "AcmeTodo/TodoRowView.swift": "import SwiftUI\n\nstruct TodoRowView: View {\n    let title: String\n    var body: some View { Text(title) }\n}\n",
    "AcmeTodoTests/AcmeTodoTests.swift": "import XCTest\n\nfinal class AcmeTodoTests: XCTestCase {}\n",
}

# Demo mobile app: a small Expo habit tracker.
