/// The page's inline style and script. Both are constants, never templated: the
/// Content-Security-Policy allows exactly these bytes by their SHA-256 (`styleHash`,
/// `scriptHash`), and WebKioskPageTests recomputes the hashes with `openssl dgst -sha256`.
/// Change a byte here and the hash constants must change with it (the test says which).
///
/// The script paints the view the server put in `<body data-view>` before the first frame, then
/// follows `/events`; when the stream errors or stays silent for 5 s it paints `data-lost` (NO
/// SIGNAL — kiosk server unreachable) and opens the stream again. Text goes in through
/// `textContent` only; colours through CSS custom properties.
enum WebKioskAssets {
    static let style = """
        html,body{margin:0;height:100%;overflow:hidden}
        body{background:var(--bg,#5a5a5a);color:var(--fg,#fff);font-family:"DejaVu Sans",Arial,sans-serif}
        main{position:fixed;left:0;right:0;top:0;bottom:7vh;display:flex;align-items:center;\
        justify-content:center;text-align:center}
        #arrow{flex:0 0 auto;width:min(76vh,44vw);height:min(76vh,44vw);margin:0 1vw 0 3vw}
        #arrow[hidden]{display:none}
        #arrow svg{display:block;width:100%;height:100%;transform:rotate(var(--deg,0deg))}
        #arrow path{fill:currentColor}
        #words{flex:1 1 0;min-width:0;display:flex;flex-direction:column;align-items:center;\
        justify-content:center;padding:0 2vw}
        h1{margin:0;max-width:100%;overflow:hidden;font-weight:900;line-height:1.1;letter-spacing:.02em;\
        white-space:nowrap;font-size:20vh}
        ul{list-style:none;margin:2vh 0 0;padding:0;max-width:100%}
        ul:empty{display:none}
        #guidance{font-size:min(6vh,4.5vw);font-weight:bold;line-height:1.2}
        #details{font-size:min(4.5vh,4vw);line-height:1.3}
        #details li{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
        #status{position:fixed;left:0;right:0;bottom:1vh;margin:0;font-size:min(3vh,3vw);font-weight:bold}
        @keyframes flash{0%,49.9%{background:var(--bg);color:var(--fg)}\
        50%,100%{background:var(--bg2);color:var(--fg2)}}
        body.flash:not(.steady){animation:flash 1s steps(1,end) infinite}
        """

    /// The arrow to the exit, pointing up; the script turns it (`--deg`).
    static let arrowSVG =
        "<svg viewBox=\"0 0 100 100\" aria-hidden=\"true\">"
        + "<path d=\"M50 3 L95 50 L67 50 L67 97 L33 97 L33 50 L5 50 Z\"/></svg>"

    static let script = """
        (function(){"use strict";
        var body=document.body,main=document.getElementById("flag"),words=document.getElementById("words"),
        head=document.getElementById("headline"),guide=document.getElementById("guidance"),
        list=document.getElementById("details"),line=document.getElementById("status"),
        arrow=document.getElementById("arrow");
        function parse(text){try{return JSON.parse(text)}catch(e){return null}}
        var lost=parse(body.getAttribute("data-lost")),first=parse(body.getAttribute("data-view"))||lost;
        var view=null,shown=null,since=0,fitted="",stamped=null;
        var speaks=!body.hasAttribute("data-preview")&&/[?&]speak=1(&|$)/.test(location.search),
        audio=null,said="no_signal",pending=0,again=0,tones=[],count=0,spoken=0;
        function unlock(){if(!audio&&window.AudioContext){audio=new AudioContext()}
        if(audio&&audio.state==="suspended"){audio.resume()}}
        function hush(){clearTimeout(pending);clearTimeout(again);if(window.speechSynthesis){speechSynthesis.cancel()}
        tones.forEach(function(o){try{o.stop()}catch(e){}});tones=[]}
        function ring(){if(!audio||audio.state!=="running"){return 0}var t=audio.currentTime+0.05;
        for(var i=0;i<6;i++){var o=audio.createOscillator(),g=audio.createGain();o.frequency.value=i%2?770:960;
        g.gain.setValueAtTime(0,t);g.gain.linearRampToValueAtTime(0.5,t+0.01);g.gain.setValueAtTime(0.5,t+0.39);
        g.gain.linearRampToValueAtTime(0,t+0.4);o.connect(g);g.connect(audio.destination);o.start(t);o.stop(t+0.4);
        tones.push(o);t+=0.4}return 2500}
        function sayings(v){return v.languages.filter(function(w){return typeof w.say==="string"&&w.say!==""})
        .map(function(w){return{lang:String(w.lang),text:w.say}})}
        function say(v){hush();count++;var list=sayings(v),alarmed=v.alarm===true,wait=alarmed?ring():0;
        body.setAttribute("data-said",JSON.stringify({flag:v.flag,alarm:alarmed,words:list}));
        body.setAttribute("data-said-count",String(count));body.setAttribute("data-audio",audio?audio.state:"none");
        pending=setTimeout(function(){if(!window.speechSynthesis){return}list.forEach(function(w){
        var u=new SpeechSynthesisUtterance(w.text);u.lang=w.lang;speechSynthesis.speak(u)});spoken+=list.length;
        body.setAttribute("data-spoken",String(spoken))},wait);
        if(alarmed){later(wait+Math.max(1000,v.speak_repeat_ms|0),0)}}
        function later(ms,n){again=setTimeout(function(){if(!view||view.alarm!==true){return}
        if(n<240&&window.speechSynthesis&&(speechSynthesis.speaking||speechSynthesis.pending)){later(250,n+1);return}
        say(view)},ms)}
        function voice(v){if(!speaks){return}var key=v.flag+(v.alarm===true?"|"+JSON.stringify(sayings(v)):"");
        if(key!==said){said=key;say(v)}}
        if(speaks){unlock();addEventListener("pointerdown",unlock);addEventListener("keydown",unlock)}
        function fill(ul,d){d=Array.isArray(d)?d:[];var items=ul.children;
        while(items.length>d.length){ul.removeChild(ul.lastChild)}
        for(var i=0;i<d.length;i++){var li=items[i];if(!li){li=document.createElement("li");ul.appendChild(li)}
        if(li.textContent!==String(d[i])){li.textContent=String(d[i])}}}
        function fit(){var key=head.textContent+"|"+arrow.hidden+"|"+innerWidth+"x"+innerHeight;
        if(key===fitted){return}fitted=key;
        var size=Math.min(innerHeight*0.4,words.clientWidth/(0.72*Math.max(3,head.textContent.length)));
        head.style.fontSize=size+"px";
        for(var n=0;n<40&&head.scrollWidth>head.clientWidth;n++){size*=0.94;head.style.fontSize=size+"px"}}
        function paint(v){if(!v||!Array.isArray(v.languages)||!v.languages.length){v=lost}
        view=v;var now=Date.now();if(v.flag!==shown){shown=v.flag;since=now}
        var p=Math.max(1,v.period_ms||4000),w=v.languages[Math.floor((now-since)/p)%v.languages.length];
        var s=body.style;s.setProperty("--bg",v.background);s.setProperty("--fg",v.foreground);
        s.setProperty("--bg2",v.flash_background);s.setProperty("--fg2",v.flash_foreground);
        s.setProperty("--deg",String(v.arrow_deg|0)+"deg");
        body.setAttribute("data-flag",v.flag);body.setAttribute("data-lang",String(w.lang));
        body.classList.toggle("flash",v.flashes===true);
        if(main.lang!==String(w.lang)){main.lang=String(w.lang)}
        arrow.hidden=typeof v.arrow!=="string";
        if(head.textContent!==String(w.headline)){head.textContent=String(w.headline)}
        if(line.textContent!==String(w.status)){line.textContent=String(w.status)}
        fill(guide,w.guidance);fill(list,w.details);fit();
        if(typeof v.seq==="number"&&v.seq!==stamped){stamped=v.seq;body.setAttribute("data-seq",String(v.seq));
        body.setAttribute("data-ts",String(v.ts));
        body.setAttribute("data-shown-at",(performance.timeOrigin+performance.now()).toFixed(3))}
        voice(v)}
        paint(first);
        addEventListener("resize",function(){fitted="";if(view){paint(view)}});
        if(body.hasAttribute("data-preview")){return}
        setInterval(function(){if(view){paint(view)}},250);
        var source=null,heard=Date.now(),opened=0;
        function open(){if(source){source.close()}opened=Date.now();source=new EventSource("/events");
        source.onmessage=function(e){heard=Date.now();paint(parse(e.data))};
        source.onerror=function(){paint(lost);if(source.readyState===2){setTimeout(function(){
        if(source.readyState===2){open()}},1000)}}}
        setInterval(function(){var now=Date.now();if(now-heard>5000){paint(lost);
        if(now-opened>5000){open()}}},1000);
        open();})();
        """

    /// `sha256-…` of `style` and `script` (base64 of the SHA-256 of their UTF-8 bytes).
    static let styleHash = "sha256-QDjWZT0YQdtaOQZ5XR2vtxJHmcgeZ2zKtO6wY47yPIk="
    static let scriptHash = "sha256-Bw+oophMlyhMezyuMKLp2qR6xhKeWR0T2FMVqwaY0Sc="

    /// The Content-Security-Policy every response carries, but the preview's.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src '\(scriptHash)'; style-src '\(styleHash)'; connect-src 'self'; "
        + "img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// A preview frame's: the page's, framed by the preview only.
    static let previewFramePolicy =
        "default-src 'none'; script-src '\(scriptHash)'; style-src '\(styleHash)'; "
        + "img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"

    /// The preview page's: its own script and style, and frames from this server.
    static let previewPolicy =
        "default-src 'none'; script-src '\(previewScriptHash)'; style-src '\(previewStyleHash)'; "
        + "frame-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// The preview's style: frames scaled down (`--scale`, set by the script) in a wrapping grid.
    static let previewStyle = """
        body{margin:1em;font-family:"DejaVu Sans",Arial,sans-serif;background:#222;color:#eee}
        h1{font-size:1.3em}h2{font-size:1.1em;margin:1em 0 .3em}
        .cell{display:inline-block;margin:0 .5em .5em 0;overflow:hidden;vertical-align:top}
        .cell iframe{border:0;transform-origin:0 0;transform:scale(var(--scale,.25));display:block}
        .cell figcaption{font-size:.8em}
        .cell[data-fits="false"]{outline:4px solid #f0f}
        """

    /// Sizes each frame's box to its scaled size, then, once every frame has loaded, checks each
    /// headline: `data-fits` on each cell, and the count of those that do not fit in the summary
    /// (`data-checked`, `data-overflows` on the body). Each cell gets its frame's place on the page
    /// (`data-x`, `data-y`), so a screenshot of the page can be cut into the frames.
    static let previewScript = """
        (function(){"use strict";
        var body=document.body,w=+body.getAttribute("data-width"),h=+body.getAttribute("data-height"),
        scale=body.hasAttribute("data-full-size")?1:Math.min(1,320/w),cells=document.querySelectorAll(".cell");
        for(var i=0;i<cells.length;i++){cells[i].style.width=(w*scale)+"px";cells[i].style.height=(h*scale+20)+"px";
        cells[i].style.setProperty("--scale",String(scale))}
        addEventListener("load",function(){var bad=0,checked=0;
        for(var i=0;i<cells.length;i++){var d=cells[i].querySelector("iframe").contentDocument,
        head=d&&d.getElementById("headline");if(!head){continue}checked++;
        var fits=head.scrollWidth<=head.clientWidth&&head.textContent.length>0;
        cells[i].setAttribute("data-fits",String(fits));
        cells[i].setAttribute("data-headline",head.textContent);if(!fits){bad++}
        var box=cells[i].querySelector("iframe").getBoundingClientRect();
        cells[i].setAttribute("data-x",String(Math.round(box.left+scrollX)));
        cells[i].setAttribute("data-y",String(Math.round(box.top+scrollY)))}
        body.setAttribute("data-checked",String(checked));body.setAttribute("data-overflows",String(bad));
        document.getElementById("summary").textContent=checked+" frames checked, "+bad+
        " headlines wider than their screen"})})();
        """

    static let previewStyleHash = "sha256-k0mrqB0wOm44fvjh4CgRRmvSicYjl4trpZm2/qPyxQ8="
    static let previewScriptHash = "sha256-uXD1yZ/qhogU0fo34sNmQbsXPjrpDnQHxLNPltu+Gqk="
}
