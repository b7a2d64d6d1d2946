SELECT age, gender, zipcode FROM {{ params.staged }}
