/** The console's style sheet (small; fits a 1280 px laptop screen). */
export const CONSOLE_STYLE = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.2em 2em; color: #222; background: #fafafa; max-width: 1600px; }
header { display: flex; gap: 1em; align-items: center; justify-content: space-between; padding: .5em 0; border-bottom: 1px solid #ddd; }
nav a { margin-left: 1em; color: #2f6fdf; text-decoration: none; } nav a.current { font-weight: 600; color: #222; }
h1 { font-size: 1.3em; margin: .6em 0 .1em; } h2 { font-size: 1.05em; margin: 1.2em 0 .3em; }
h2.heading { font-size: 1.15em; border-bottom: 1px solid #ddd; padding-bottom: .2em; }
.meta { color: #555; } .ok { color: #186a1e; font-weight: 600; } .bad { color: #b3261e; font-weight: 600; }
table { border-collapse: collapse; background: #fff; margin-bottom: .4em; }
th, td { border: 1px solid #ddd; padding: .2em .5em; text-align: left; vertical-align: top; font-variant-numeric: tabular-nums; }
td a { white-space: nowrap; }
th { background: #f0f0f0; } td.empty, li.empty { color: #888; font-style: italic; }
td.pre { white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: .85em; max-width: 50em; }
.bar { display: inline-block; width: 8em; height: .75em; background: #e4e4e4; vertical-align: middle; margin-right: .4em; }
.bar > span { display: inline-block; vertical-align: top; height: 100%; background: #2f6fdf; }
.state-ready, .state-promoted, .state-ok, .state-fulfilled { color: #186a1e; }
.state-failed, .state-lost, .state-aborted, .state-denied, .state-error, .state-revoked, .state-short { color: #b3261e; }
.state-building, .state-uploading, .state-pending, .state-canary { color: #2f6fdf; } .state-validating, .state-hold, .state-refused { color: #8a5a00; }
ul.lines { margin: .3em 0; padding-left: 1.2em; } ul.lines li { white-space: pre-wrap; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; } .chart svg { background: #fff; border: 1px solid #ddd; }
button.action { font-size: .85em; padding: .05em .5em; }
body:not(.signed-in) .action, body:not(.signed-in) #signed-in, body.signed-in #signin, body.signed-in .signin-hint { display: none; }
.signin-hint { color: #888; font-style: italic; }
#message { min-height: 1.4em; margin: .3em 0; } #message.ok { color: #186a1e; } #message.bad { color: #b3261e; }
form.filters { margin: .5em 0; }
pre#log { background: #111; color: #ddd; padding: .6em; max-height: 32em; overflow: auto; font-size: .85em; white-space: pre-wrap; }
#updated { color: #888; }
`;
