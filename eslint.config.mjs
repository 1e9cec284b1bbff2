// ESLint for the explorer's browser modules (explorer/web): no build step, the files are
// served to the browser as they are, so the linter reads them as the browser will.
// .mjs so that no "type" field is needed in package.json (nothing else here is Node code).
import js from "@eslint/js";
import stylistic from "@stylistic/eslint-plugin";
import globals from "globals";

export default [
  // ESLint's recommended rules catch real mistakes (undefined names, unused variables,
  // unreachable code) and leave style to the one rule below.
  js.configs.recommended,
  {
    files: ["explorer/web/**/*.js"],
    languageOptions: {
      ecmaVersion: "latest",
      sourceType: "module", // every file is an ES module (notebook-loader.js: an inline <script type="module">)
      globals: globals.browser, // browser code only: no Node globals
    },
    plugins: { "@stylistic": stylistic },
    rules: {
      // The project's line limit, for every line (comments, strings and URLs too); ESLint 9's
      // own max-len is deprecated, @stylistic keeps it.
      "@stylistic/max-len": ["error", { code: 120 }],
    },
  },
  {
    // Not a module: Gradio runs this file as the body of a block's js_on_load function,
    // with these four names in scope (explorer/blocks.py).
    files: ["explorer/web/gradio-on-load.js"],
    languageOptions: {
      sourceType: "script",
      globals: { element: "readonly", props: "readonly", trigger: "readonly", watch: "readonly" },
    },
  },
];
