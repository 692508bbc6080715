// Spends a one-time experimenter sign-in link by POST as soon as the page opens (a person who
// opened the link wants to sign in; link previews that only fetch the page do not run this).
"use strict";
const form = document.getElementById("link-sign-in");
if (form) form.submit();
