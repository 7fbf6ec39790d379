//! The HTML the target serves. Each page embeds a ViewState exactly as JSF renders it, so the
//! regex users already have for JSF sites works unchanged.

pub fn layout(title: &str, view_state: &str, content: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><title>{title}</title></head><body>\n\
         <h1 class=\"title\">{title}</h1>\n{content}\n\
         <form id=\"j_id1\" method=\"post\">\
         <input type=\"hidden\" name=\"javax.faces.ViewState\" id=\"j_id1:javax.faces.ViewState:1\" \
         value=\"{view_state}\" autocomplete=\"off\" /></form>\n</body></html>\n"
    )
}

pub fn home(view_state: &str) -> String {
    layout("Saw mill", view_state, "<p>Welcome to the saw mill.</p><a id=\"login\" href=\"/login\">Log in</a>")
}

pub fn login(view_state: &str) -> String {
    layout(
        "Log in",
        view_state,
        "<form id=\"loginForm\" method=\"post\" action=\"/login\">\
         <input name=\"username\" /><input name=\"password\" type=\"password\" />\
         <button type=\"submit\">Log in</button></form>",
    )
}

pub fn account(view_state: &str, user: &str, message: &str) -> String {
    layout(
        "Account",
        view_state,
        &format!(
            "<p id=\"user\">{}</p><p id=\"message\">{}</p>\
             <form method=\"post\" action=\"/account\"><input name=\"comment\" /></form>\
             <form method=\"post\" action=\"/upload\" enctype=\"multipart/form-data\">\
             <input type=\"file\" name=\"file_upload_file\" /></form>",
            escape(user),
            escape(message)
        ),
    )
}

pub fn view_expired() -> String {
    "<!DOCTYPE html>\n<html><head><title>Error</title></head><body>\
     <h1>javax.faces.application.ViewExpiredException</h1>\
     <p>viewId:/page.xhtml - View /page.xhtml could not be restored.</p></body></html>\n"
        .to_string()
}

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
