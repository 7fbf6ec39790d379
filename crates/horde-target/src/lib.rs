//! The built-in target: a small site shaped like the JSF application of seed 000, for
//! `horde demo`, `horde target`, practice and tests.
//!
//! ```no_run
//! let server = horde_target::TargetServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
//! println!("serving on http://{}", server.addr());
//! // ... run load against it ...
//! println!("{} requests served", server.stats().total);
//! ```
//!
//! Every HTML page carries a hidden `javax.faces.ViewState` that changes at each page load;
//! a POST must send back the latest one of its session, or it gets JSF's
//! ViewExpiredException page (status 500). Routes:
//!
//! | route | what |
//! |---|---|
//! | `GET /` | home page, public |
//! | `GET /login`, `POST /login` | login form; username + any non-empty password; sets the session, 302 to `/account` |
//! | `GET /account`, `POST /account` | a form for a logged-in user (302 to `/login` otherwise) |
//! | `POST /upload` | multipart form: fields, the ViewState and a file; answers with the file's name and size |
//! | `GET /logout` | ends the session, 302 to `/` |
//! | `GET /api/items`, `GET /api/items/{id}` | a small JSON API |
//! | `POST /api/echo` | answers with the JSON document it was sent (400 if it is not JSON) |
//! | `ANY /status/{code}[/...]` | answers with that status (whatever follows the code) |
//! | `GET /delay/{ms}` | answers after that many milliseconds (at most 60 s) |
//! | `GET /work/{ms}` | takes one of `work_slots` slots (default 4) for that many milliseconds: capacity = slots / service time |
//! | `GET /stats` | what the server saw, as JSON (not counted itself) |

mod pages;
mod server;

pub use server::{Stats, TargetOptions, TargetServer};
