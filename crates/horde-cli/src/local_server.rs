//! The HTTP server behind horde's own live pages (`--metrics`, `--dashboard`): it serves on a
//! thread of its own with a small runtime, away from the workers, each connection a task of
//! its own (an event stream lasts the whole run; a scraper that hangs holds only itself), until
//! it is dropped. Its owner binds the listener, so that a port in use is found before any load.

use hyper::body::{Body, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::future::Future;
use tokio::sync::oneshot;

pub(crate) struct LocalServer {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LocalServer {
    /// Serves `answer` to every request on `listener` (non-blocking, already bound) from a
    /// thread named `name`.
    pub fn start<F, Fut, B>(listener: std::net::TcpListener, name: &str, answer: F) -> std::io::Result<LocalServer>
    where
        F: Fn(Request<Incoming>) -> Fut + Clone + Send + 'static,
        Fut: Future<Output = Response<B>> + Send + 'static,
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new().name(name.into()).spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
            // Returning drops the runtime, and with it every connection still open.
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
                let mut stopped = stopped;
                loop {
                    let stream = tokio::select! {
                        _ = &mut stopped => return,
                        accepted = listener.accept() => match accepted {
                            Ok((stream, _)) => stream,
                            Err(_) => continue,
                        },
                    };
                    let answer = answer.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |request: Request<Incoming>| {
                            let answered = answer(request);
                            async move { Ok::<_, Infallible>(answered.await) }
                        });
                        let connection = TokioIo::new(stream);
                        let _ = hyper::server::conn::http1::Builder::new().serve_connection(connection, service).await;
                    });
                }
            });
        })?;
        Ok(LocalServer { stop: Some(stop), thread: Some(thread) })
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
