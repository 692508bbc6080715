package web

import "github.com/gofiber/fiber/v2"

// routes registers every route of the app, in the order Fiber matches them: the middleware every
// request passes, the public pages, then each kind of person's pages and API behind the check of
// their own credential, and a 404 for anything else. The sign-in routes come before the /x group
// so that they are reached without a session.
func (s *Server) routes() {
	app := s.app
	app.Use(s.securityHeaders, s.redactResponses, s.sameOrigin, s.jsonBodies)
	app.Get("/", s.home)
	app.Get("/ui/:file", s.static)
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	app.Get("/favicon.ico", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusNoContent) })

	// Participants: the recruiting link, then everything behind the participant's token.
	app.Get("/join/:study", s.join)
	app.Get("/p/:token", s.participantPage)
	p := app.Group("/api/p/:token", s.participantAuth)
	p.Get("/state", s.participantState)
	p.Post("/consent", s.participantConsent)
	p.Post("/miccheck", s.participantMicCheck)
	p.Post("/call", s.participantStartCall)
	p.Get("/call/:sid", s.participantCall)
	p.Post("/call/:sid/offer", s.participantOffer)
	p.Post("/call/:sid/hangup", s.participantHangUp)

	// Experimenters: signing in and out, then the dashboard and review behind the session.
	app.Get("/x/login", s.loginPage)
	app.Post("/x/login", s.login)
	app.Post("/x/login/link", s.linkSignIn)
	app.Get("/x/logout", s.logoutPage)
	app.Post("/x/logout", s.logout)
	x := app.Group("/x", s.experimenterAuth)
	x.Get("/", func(c *fiber.Ctx) error { return s.sendPage(c, "experimenter.html") })
	x.Get("/session/:sid", func(c *fiber.Ctx) error { return s.sendPage(c, "review.html") })
	xapi := app.Group("/api/x", s.experimenterAuth)
	xapi.Get("/me", s.experimenterMe)
	xapi.Get("/overview", s.overview)
	xapi.Get("/sessions", s.sessions)
	xapi.Get("/sessions/:sid", s.sessionDetail)
	xapi.Get("/sessions/:sid/trace.jsonl", s.sessionTrace)
	xapi.Get("/sessions/:sid/recording.wav", s.sessionRecording)
	xapi.Get("/sessions/:sid/peaks", s.sessionPeaks)
	xapi.Post("/sessions/:sid/exclude", s.excludeSession)
	xapi.Post("/sessions/:sid/listen", s.listen)
	xapi.Get("/live", s.liveStream)
	xapi.Post("/plan", s.planStudy)

	// Annotators: the rating app behind the annotator's token.
	app.Get("/a/:token", s.annotatorPage)
	a := app.Group("/api/a/:token", s.annotatorAuth)
	a.Get("/state", s.annotatorState)
	a.Get("/items/:item", s.annotatorItem)
	a.Get("/items/:item/audio", s.annotatorAudio)
	a.Put("/ratings/:item", s.annotatorRate)

	app.Use(func(c *fiber.Ctx) error { return fiber.ErrNotFound })
}
